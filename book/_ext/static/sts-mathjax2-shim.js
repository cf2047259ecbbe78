// @jupyter-widgets/base typesets widget labels with the MathJax 2 API,
// MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]); the book loads MathJax 3, which has no Hub,
// so every page with a widget threw "Cannot read properties of undefined (reading 'Queue')".
// This file is loaded with `defer` right after MathJax 3 and forwards such calls to typesetPromise.
(function () {
  "use strict";
  var mj = window.MathJax;
  if (!mj || mj.Hub || !mj.startup) return;
  mj.Hub = {
    Queue: function () {
      var elements = Array.prototype.filter
        .call(arguments, function (c) { return Array.isArray(c) && c[0] === "Typeset" && c[2]; })
        .map(function (c) { return c[2]; });
      if (elements.length) {
        mj.startup.promise
          .then(function () { return mj.typesetPromise(elements); })
          .catch(function (err) { console.error("MathJax typeset of a widget failed:", err); });
      }
    },
  };
})();
