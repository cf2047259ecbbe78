// In the static HTML a saved widget is drawn by the ipywidgets HTML manager, but no kernel runs:
// its sliders do nothing. Say so above every widget, and replace the live-only status text
// ("Move a slider: the model is retrained ...") that would otherwise promise an update.
(function () {
  "use strict";
  var NOTE = "Static copy of an interactive panel: its controls do nothing on this page. " +
    "To use them, open this chapter in Colab (rocket button at the top) or in Jupyter and run it. " +
    "The figure shows the default settings.";
  var LIVE_ONLY = /^\s*Move (a|the) slider/;
  function addNotes() {
    var views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    Array.prototype.forEach.call(views, function (view) {
      var prev = view.previousElementSibling;
      if (prev && prev.classList && prev.classList.contains("sts-static-note")) return;
      var p = document.createElement("p");
      p.className = "sts-static-note";
      p.textContent = NOTE;
      view.parentNode.insertBefore(p, view);
    });
  }
  function fixStatus(root) {
    var nodes = (root || document).querySelectorAll(".widget-html-content, .widget-html");
    Array.prototype.forEach.call(nodes, function (el) {
      if (el.children.length === 0 && LIVE_ONLY.test(el.textContent)) {
        el.textContent = "Live controls need a running kernel (Colab or Jupyter).";
      }
    });
  }
  function start() {
    addNotes();
    fixStatus();
    if (!window.MutationObserver) return;
    var obs = new MutationObserver(function () { fixStatus(); });
    obs.observe(document.body, { childList: true, subtree: true });
    setTimeout(function () { obs.disconnect(); }, 20000);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
