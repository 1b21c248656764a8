// Renders Vega-Lite specs to SVG: node render.mjs <chart.vl.json> [<more.vl.json>...]
// Each SVG is written beside its spec (chart.vl.json -> chart.svg). Exits non-zero if any spec fails,
// after trying all of them, so one bad chart does not hide the others.
import { readFile, writeFile } from 'node:fs/promises';
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';

const specSuffix = '.vl.json';

async function renderSpec(specPath) {
  if (!specPath.endsWith(specSuffix)) {
    throw new Error(`expected a file name ending in ${specSuffix}`);
  }

  const liteSpec = JSON.parse(await readFile(specPath, 'utf8'));
  const { spec } = vegaLite.compile(liteSpec);
  // renderer 'none' draws nothing on screen; toSVG() builds the markup without a canvas.
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    const svgPath = specPath.slice(0, -specSuffix.length) + '.svg';
    await writeFile(svgPath, svg, 'utf8');
    return svgPath;
  } finally {
    view.finalize();
  }
}

const specPaths = process.argv.slice(2);
if (specPaths.length === 0) {
  console.error('usage: node render.mjs <chart.vl.json> [<more.vl.json>...]');
  process.exit(2);
}

let failures = 0;
for (const specPath of specPaths) {
  try {
    console.log(await renderSpec(specPath));
  } catch (error) {
    failures++;
    console.error(`${specPath}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

process.exitCode = failures === 0 ? 0 : 1;
