// Optional npm packages (tfjs-node, onnxruntime-node): not installed with gsteer, because
// their install scripts download native builds from outside the npm registry and would break
// an install where that is unreachable. Imported by name only where a config asks for them.

/**
 * The package's module, or null when `pkg` itself is not installed. Any other failure (a
 * native library that does not load, a missing dependency of the package) is thrown.
 */
export async function importOptional<T = unknown>(pkg: string): Promise<T | null> {
  try {
    return (await import(/* @vite-ignore */ pkg)) as T;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const missing =
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      new RegExp(`['"]${pkg.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}['"/]`).test(String((e as Error).message));
    if (missing) return null;
    throw e;
  }
}
