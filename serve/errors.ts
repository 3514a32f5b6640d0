// OpenAI's error shape `{ error: { message, type, param, code } }` with the HTTP status the
// OpenAI/vLLM servers use: 400 bad request, 401 bad key, 403 a Host or lora_path not
// allowed, 404 unknown model or route, 405 wrong method, 413 body too large, 415 a body that
// is not JSON, 500 a bug in gsteer.

export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'method_not_allowed' | 'internal_server_error';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly type: ApiErrorType = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  body(): { error: { message: string; type: string; param: string | null; code: string | number | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code ?? this.status } };
  }
}

/** 400 naming the field, the value, the rule and the fix. */
export function badRequest(message: string, param: string | null = null): ApiError {
  return new ApiError(400, message, 'invalid_request_error', param);
}

export function notFound(message: string, param: string | null = null): ApiError {
  return new ApiError(404, message, 'not_found_error', param, 'model_not_found');
}
