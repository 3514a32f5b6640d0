#!/usr/bin/env node
// The `gsteer` bin: registers the TypeScript loader, then runs cli/main.ts.
import { register } from 'tsx/esm/api';

register();
await import('./main.ts');
