// The book's mathematics typeset at build time (book/_ext/sts_book/mathjax.py starts this worker once per build).
// MathJax 3.2.2, the very components a reader's browser used to load (_vendor/mathjax), run in Node.js with
// MathJax's own node entry point and its lite DOM (book/_ext/mathjax_node, unchanged from the npm tarball). One
// request a line on stdin, one JSON answer a line on stdout:
//   {"tex": "...", "display": true}  ->  {"html": "<mjx-container ...>", "error": null | "Undefined control ..."}
//   {"css": true}                    ->  {"css": "..."}: the CommonHTML stylesheet for what was typeset since the
//                                        last such request (the characters of one page), and a fresh start
// argv[2] is MathJax's configuration (the book's mathjax3_config) as JSON; its "loader" is replaced by ours.
"use strict";
const path = require("path");
const readline = require("readline");

const config = JSON.parse(process.argv[2] || "{}");
const VENDOR = path.resolve(__dirname, "..", "..", "..", "_vendor", "mathjax");
const load = ((config.loader || {}).load || []).filter((name) => name !== "ui/menu");
config.loader = {
  require: require,
  versionWarnings: false,   // the node entry point and lite DOM carry no version stamp; they are 3.2.2 too
  paths: {mathjax: VENDOR, node: path.join(__dirname, "..", "mathjax_node")},
  load: ["[node]/adaptors/liteDOM"].concat(load),
};
// The page writes the fonts' address: each page has its own path to _static (sts_book/mathjax.py replaces FONTS).
config.chtml = Object.assign({}, config.chtml, {fontURL: "FONTS"});
config.startup = Object.assign({}, config.startup, {typeset: false});

require(path.join(__dirname, "..", "mathjax_node", "node-main.js")).init(config).then((MathJax) => {
  const adaptor = MathJax.startup.adaptor;
  const answer = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
  // One request at a time, in order: autoload may fetch an extension (a promise) in the middle of one.
  let queue = Promise.resolve();
  readline.createInterface({input: process.stdin}).on("line", (line) => {
    queue = queue.then(async () => {
      const request = JSON.parse(line);
      if (request.css) {
        answer({css: adaptor.textContent(MathJax.chtmlStylesheet())});
        MathJax.startup.output.clearCache();
        return;
      }
      try {
        const node = await MathJax.tex2chtmlPromise(request.tex, {display: !!request.display});
        const error = adaptor.tags(node, "mjx-merror")[0];
        answer({html: adaptor.outerHTML(node), error: error ? adaptor.getAttribute(error, "data-mjx-error") : null});
      } catch (err) {
        answer({html: "", error: String(err && err.message || err)});
      }
    });
  });
}).catch((err) => {
  process.stderr.write("sts_book/mathjax.js: MathJax did not start: " + (err && err.stack || err) + "\n");
  process.exit(1);
});
