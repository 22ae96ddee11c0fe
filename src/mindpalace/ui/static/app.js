// mindpalace inspector: the little the pages need beyond HTML.
// Loaded from this site only (the Content-Security-Policy allows nothing else).
"use strict";

document.addEventListener("submit", (event) => {
  // Forms that destroy or hide something ask first (data-confirm).
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

document.addEventListener("keydown", (event) => {
  // "/" focuses the search box, as on many sites.
  const target = event.target;
  const typing = target instanceof HTMLElement &&
    (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  if (event.key === "/" && !typing) {
    const box = document.getElementById("q");
    if (box) {
      event.preventDefault();
      box.focus();
    }
  }
});
