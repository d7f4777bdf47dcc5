/**
 * Starts a worker thread on the module beside the caller. Run from source (tests), the
 * entry is TypeScript and loads through tsx, as the store's writer thread does
 * (`--import tsx` is not applied to a worker's entry on Node 20).
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

/** `entry` is the thread's module as built (`./x-thread.js`), relative to `importMetaUrl`. */
export function startThread(
  entry: string,
  importMetaUrl: string,
  options: Pick<WorkerOptions, 'resourceLimits' | 'workerData'> = {},
): Worker {
  if (!importMetaUrl.endsWith('.ts')) return new Worker(new URL(entry, importMetaUrl), options);
  const source = JSON.stringify(new URL(entry.replace(/\.js$/, '.ts'), importMetaUrl).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then(({ tsImport }) => tsImport(${source}, ${source}))`, {
    ...options,
    eval: true,
  });
}
