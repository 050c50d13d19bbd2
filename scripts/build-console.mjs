// Builds the console page (integrations/console/page/) into dist/console-page/app.js and app.css:
// the two files the console's HTML shell loads, with fixed names (no hashes) so the server can
// serve them by name. Run by `npm run build` and `npm run build:console`; `--out <dir>` writes
// elsewhere (the bundle-size test builds into a temporary folder).
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const at = process.argv.indexOf('--out');
const outDir = at === -1 ? resolve(root, 'dist/console-page') : resolve(process.argv[at + 1] ?? '');

await build({
  root,
  configFile: false,
  logLevel: 'warn',
  publicDir: false,
  build: {
    outDir,
    emptyOutDir: true,
    // The page runs only in current browsers; the shell loads it as a module.
    target: 'es2022',
    minify: true,
    cssMinify: true,
    sourcemap: false,
    copyPublicDir: false,
    modulePreload: false,
    rolldownOptions: {
      input: resolve(root, 'integrations/console/page/main.ts'),
      output: { entryFileNames: 'app.js', assetFileNames: 'app[extname]' },
    },
  },
});
