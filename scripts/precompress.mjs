#!/usr/bin/env node
// Writes FILE.gz (gzip -9) and FILE.br (brotli, quality 11) next to every
// .html, .css, .js, .wasm and .bin file of a folder, for servers that send a
// precompressed file as it is (nginx gzip_static / brotli_static, Caddy's
// `file_server { precompressed br gzip }`, most static hosts).
//
//   node scripts/precompress.mjs [DIR]
//
// DIR defaults to $TRUNK_STAGING_DIR (when Trunk runs it as a post_build
// hook, see Trunk.toml), else dist. Under Trunk it does nothing for a debug
// build. Node's own zlib does both, so nothing else is installed.
import { readdirSync, readFileSync, writeFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync, brotliCompressSync, constants } from 'node:zlib';

if (process.env.TRUNK_PROFILE && process.env.TRUNK_PROFILE !== 'release') process.exit(0);
const dir = process.argv[2] ?? process.env.TRUNK_STAGING_DIR ?? 'dist';
for (const name of readdirSync(dir)) {
  const file = join(dir, name);
  // Stale compressed copies of files that are gone.
  if (/\.(gz|br)$/.test(name)) {
    try { statSync(file.replace(/\.(gz|br)$/, '')); } catch { unlinkSync(file); }
    continue;
  }
  if (!/\.(html|css|js|wasm|bin)$/.test(name) || !statSync(file).isFile()) continue;
  const body = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
  writeFileSync(`${file}.br`, brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
  }));
}
