import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { packageRoot, repositoryRoot } from './support/host.js';

// The documents' TypeScript, JavaScript and HTML module snippets, type-checked against the client's own types as a page
// that imports '/_channelpool/polling-duplex/index.js' from the server sees them: a snippet that calls the client
// wrongly, or an event that does not exist, fails here. Names a snippet leaves to the reader are declared below.
const documents = ['README.md', 'docs/polling-duplex.md', 'clients/polling-duplex/README.md'];
const prelude = 'declare const signal: AbortSignal;\ndeclare function handle(...args: unknown[]): void;\ndeclare function show(...args: unknown[]): void;\nexport {};\n';

function snippets(file: string): { name: string; code: string }[] {
  const found: { name: string; code: string }[] = [];
  const lines = readFileSync(join(repositoryRoot, file), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(ts|js|html)\s*$/.exec(lines[i]!);
    if (open === null) {
      continue;
    }

    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) {
      body.push(lines[i]!);
    }

    let code = body.join('\n');
    if (open[2] === 'html') {
      const script = /<script type="module">([\s\S]*?)<\/script>/.exec(code);
      if (script === null) {
        continue;
      }

      code = script[1]!;
    }

    found.push({ name: `${file.replace(/[/.]/g, '_')}_line${start}`, code });
  }

  return found;
}

test('the documents\' TypeScript, JavaScript and HTML snippets type-check against the client\'s types', async () => {
  const all = documents.flatMap(snippets);
  assert.ok(all.length >= 3, `found ${all.length} snippets`);
  const dir = await mkdtemp(join(tmpdir(), 'doc-snippets-'));
  try {
    for (const { name, code } of all) {
      await writeFile(join(dir, `${name}.ts`), `${prelude}${code}\n`);
    }

    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], strict: true, noEmit: true, skipLibCheck: true,
        paths: { '/_channelpool/polling-duplex/index.js': [join(packageRoot, 'src', 'index.ts')] },
      },
      include: ['*.ts'],
    }));
    const tsc = spawnSync(process.execPath, [join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], { encoding: 'utf8', cwd: dir });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
