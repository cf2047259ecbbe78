// sts-self-check.js: a chapter's self-checks answered on the page (issue 49, item 3). The markup, its words and
// every explanation are written at build time (book/_ext/sts_book/self_check.py); this script only shows what needs it
// (data-sts-needs-script), hides the instructions for a reader without it, keeps the reader's checked answers in
// localStorage (keyed by chapter and question; without storage, in this page until it is left), shows the checked
// choice's explanation (the hidden attribute), sets the question's result (data-sts-result) and fills in the score.
// It writes no class and no element.
(() => {
  "use strict";
  const memory = new Map();
  const storage = (() => {
    try {
      const s = window.localStorage;
      s.setItem("sts-self-check:probe", "1");
      s.removeItem("sts-self-check:probe");
      return s;
    } catch (e) {
      return null; // blocked (a private window, a browser setting) or absent: answers last as long as the page
    }
  })();
  const load = (key) => {
    try {
      if (storage) return storage.getItem(key);
    } catch (e) { /* fall back to the page's memory */ }
    return memory.has(key) ? memory.get(key) : null;
  };
  const save = (key, value) => {
    memory.set(key, value);
    try {
      if (storage) storage.setItem(key, value);
    } catch (e) { /* full or blocked: the page's memory holds it */ }
  };
  const forget = (key) => {
    memory.delete(key);
    try {
      if (storage) storage.removeItem(key);
    } catch (e) { /* nothing stored */ }
  };

  function setUp(box) {
    const chapter = box.dataset.stsSelfChecks;
    const prefix = box.dataset.stsStorage || "sts-self-check";
    const questions = Array.from(box.querySelectorAll("fieldset[data-sts-question]"));
    const score = box.querySelector("[data-sts-score]");
    const key = (q) => `${prefix}:${chapter}:${q.dataset.stsQuestion}`;
    const radios = (q) => Array.from(q.querySelectorAll('input[type="radio"]'));

    // Show the explanation of choice `letter` (null: none) and set the question's result from its verdict.
    function show(q, letter, chooseFirst) {
      let shown = null;
      for (const e of q.querySelectorAll("[data-sts-explanation]")) {
        e.hidden = e.dataset.stsExplanation !== letter;
        if (!e.hidden) shown = e;
      }
      q.querySelector("[data-sts-choose-first]").hidden = !chooseFirst;
      if (shown) q.dataset.stsResult = shown.dataset.stsVerdict;
      else delete q.dataset.stsResult;
    }

    function tally() {
      const right = questions.filter((q) => q.dataset.stsResult === "right").length;
      const open = questions.filter((q) => !q.dataset.stsResult).length;
      const fill = (words) => words.replace("{right}", right).replace("{total}", questions.length)
        .replace("{open}", open);
      score.textContent = fill(score.dataset.stsWords) + (open ? `; ${fill(score.dataset.stsOpenWords)}` : "") + ".";
      box.dataset.stsRight = right;
      box.dataset.stsOpen = open;
    }

    function check(q) {
      const chosen = radios(q).find((r) => r.checked);
      if (chosen) save(key(q), chosen.value);
      else forget(key(q));
      show(q, chosen ? chosen.value : null, !chosen);
      tally();
    }

    for (const q of questions) {
      q.querySelector("[data-sts-check]").addEventListener("click", () => check(q));
      for (const r of radios(q)) {
        // A new choice hides the last one's explanation: the result shown is always the checked choice's.
        r.addEventListener("change", () => {
          if (q.dataset.stsResult || !q.querySelector("[data-sts-choose-first]").hidden) {
            forget(key(q));
            show(q, null, false);
            tally();
          }
        });
        r.addEventListener("keydown", (event) => {
          if (event.key === "Enter") {
            event.preventDefault();
            check(q);
          }
        });
      }
      const stored = load(key(q));
      const radio = radios(q).find((r) => r.value === stored);
      if (radio) {
        radio.checked = true;
        show(q, stored, false);
      } else if (stored !== null) {
        forget(key(q)); // a choice the chapter no longer has
      }
    }
    box.querySelector("[data-sts-reset]").addEventListener("click", () => {
      for (const q of questions) {
        for (const r of radios(q)) r.checked = false;
        forget(key(q));
        show(q, null, false);
      }
      tally();
    });
    for (const e of box.querySelectorAll("[data-sts-needs-script]")) e.hidden = false;
    for (const e of box.querySelectorAll("[data-sts-without-script]")) e.hidden = true;
    tally();
    box.dataset.stsReady = "";
  }

  const start = () => document.querySelectorAll("[data-sts-self-checks]").forEach(setUp);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
