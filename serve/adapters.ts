// LoRA adapters loaded at run time (vLLM's `/v1/load_lora_adapter` and
// `/v1/unload_lora_adapter`); a request picks one by naming it in `model`. An adapter that
// is unloaded while requests still use it stays alive until the last of them finishes.
// A lora_path sent over HTTP must lie under one of the server's allowed roots (symlinks
// resolved), so a client cannot make the server read any file it can.
import { existsSync, realpathSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { InputError } from '../util/errors.ts';
import { ApiError, badRequest, notFound } from './errors.ts';
import type { AdapterHandle, ServeModel } from './model.ts';

interface Entry {
  name: string;
  path: string;
  created: number; // unix seconds
  handle: AdapterHandle;
  users: number;
  unloaded: boolean;
}

/** What a request holds while it runs: the adapter (null = base model) and its release. */
export interface Lease {
  name: string;
  adapter: AdapterHandle | null;
  release(): void;
}

const real = (p: string) => (existsSync(p) ? realpathSync(p) : resolve(p));

/** 403 unless `path` (symlinks resolved) is one of `roots` or inside one. */
export function checkLoraRoot(path: string, roots: readonly string[]): void {
  const at = real(path);
  const inside = (root: string) => {
    const r = relative(real(root), at);
    return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !r.startsWith(sep));
  };
  if (!roots.some(inside))
    throw new ApiError(
      403,
      `lora_path "${path}" is outside the folders this server loads adapters from (${roots.join(', ')}); put the adapter there, or start gsteer serve with --lora-root DIR`,
      'invalid_request_error',
      'lora_path',
    );
}

export class AdapterRegistry {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Set<string>();

  constructor(
    private readonly model: ServeModel,
    readonly baseName: string,
    /** Called when an adapter is freed (the prefix cache drops its blocks). */
    private readonly onDispose: (handle: AdapterHandle) => void = () => {},
  ) {}

  private free(handle: AdapterHandle): void {
    this.onDispose(handle);
    handle.dispose();
  }

  /** `roots`: where a path sent over HTTP may be (adapters given at start are not limited). */
  async load(name: string, path: string, roots?: readonly string[]): Promise<void> {
    if (name === this.baseName) throw badRequest(`lora_name "${name}" is the base model's name; choose another name`, 'lora_name');
    if (this.entries.has(name) || this.loading.has(name))
      throw badRequest(`The lora adapter '${name}' has already been loaded; unload it first or pick another lora_name`, 'lora_name');
    if (roots) checkLoraRoot(path, roots);
    this.loading.add(name);
    try {
      const handle = await this.model.loadAdapter(path);
      this.entries.set(name, { name, path, created: Math.floor(Date.now() / 1000), handle, users: 0, unloaded: false });
    } catch (e) {
      if (e instanceof InputError) throw badRequest(`cannot load lora_path "${path}": ${e.message}`, 'lora_path');
      throw new ApiError(400, `cannot load lora_path "${path}": ${(e as Error).message}`, 'invalid_request_error', 'lora_path');
    } finally {
      this.loading.delete(name);
    }
  }

  unload(name: string): void {
    const e = this.entries.get(name);
    if (!e) throw notFound(`The lora adapter '${name}' cannot be found; GET /v1/models lists the loaded ones`, 'lora_name');
    this.entries.delete(name);
    e.unloaded = true;
    if (e.users === 0) this.free(e.handle);
  }

  /** The base model or a loaded adapter by the request's `model`; 404 otherwise. */
  acquire(model: string): Lease {
    if (model === this.baseName) return { name: model, adapter: null, release: () => {} };
    const e = this.entries.get(model);
    if (!e) {
      const known = [this.baseName, ...this.entries.keys()].map((n) => `"${n}"`).join(', ');
      throw notFound(`The model '${model}' does not exist; use one of ${known}`, 'model');
    }
    e.users++;
    let released = false;
    return {
      name: model,
      adapter: e.handle,
      release: () => {
        if (released) return;
        released = true;
        if (--e.users === 0 && e.unloaded) this.free(e.handle);
      },
    };
  }

  list(): { name: string; path: string; created: number }[] {
    return [...this.entries.values()].map(({ name, path, created }) => ({ name, path, created }));
  }

  disposeAll(): void {
    for (const e of this.entries.values()) this.free(e.handle);
    this.entries.clear();
  }
}
