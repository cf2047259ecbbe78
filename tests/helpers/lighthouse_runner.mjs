// One Node process for every Lighthouse run of an audit (tests/helpers/lighthouse.py): the CLI started Node, loaded
// Lighthouse and resolved its configuration again for each run (about 4 of a chapter's 16 s here). Each run still
// gets a Chromium of its own, launched by Lighthouse's own launcher with a fresh profile, exactly as the CLI does.
//
// Protocol: the first argument is the path of lighthouse's package folder; then one JSON object per line on stdin,
// {"url", "chromePath", "chromeFlags", "flags"}, and one line per run on stdout: the report (JSON), or
// {"error": "..."}.
import {createInterface} from 'node:readline';
import {pathToFileURL} from 'node:url';
import path from 'node:path';

const home = process.argv[2];
const {default: lighthouse} = await import(pathToFileURL(path.join(home, 'lighthouse', 'core', 'index.js')).href);
const chromeLauncher = await import(pathToFileURL(path.join(home, 'chrome-launcher', 'dist', 'index.js')).href);

for await (const line of createInterface({input: process.stdin})) {
  if (!line.trim()) continue;
  const job = JSON.parse(line);
  let chrome;
  try {
    chrome = await chromeLauncher.launch({chromePath: job.chromePath, chromeFlags: job.chromeFlags});
    const result = await lighthouse(job.url, {...job.flags, port: chrome.port, output: 'json'});
    process.stdout.write(JSON.stringify(result.lhr) + '\n');
  } catch (err) {
    process.stdout.write(JSON.stringify({error: String(err && err.stack || err)}) + '\n');
  } finally {
    if (chrome) await chrome.kill();
  }
}
