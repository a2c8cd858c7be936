// trialhouse view: light JavaScript only. Every page reads without it; this adds
// (1) filtering of the trial list in a static bundle (the server filters on its own), and
// (2) showing or hiding kinds of timeline entries. Nothing is fetched.
"use strict";

function trialRowMatches(row, want) {
  const d = row.dataset;
  const words = (s) => (s || "").split(/\s+/).filter(Boolean);
  if (want.run && d.run !== want.run) return false;
  if (want.outcome && d.outcome !== want.outcome) return false;
  if (want.universe && d.universe !== want.universe) return false;
  if (want.case && d.case !== want.case) return false;
  if (want.config && !words(d.config).includes(want.config)) return false;
  for (const key of ["flag", "queue"]) {
    const have = words(d[key]);
    if (want[key] === "any" && have.length === 0) return false;
    if (want[key] && want[key] !== "any" && !have.includes(want[key])) return false;
  }
  if (want.label && !(d.labels || "").split("\n").includes(want.label.replace(/\s*=\s*/, "="))) return false;
  if (want.q && !d.id.toLowerCase().includes(want.q.toLowerCase())) return false;
  return true;
}

function filterTrials(form) {
  const want = {};
  for (const el of form.elements) if (el.name) want[el.name] = el.value.trim();
  let shown = 0;
  for (const row of document.querySelectorAll("#trial-list tbody tr")) {
    const ok = trialRowMatches(row, want);
    row.hidden = !ok;
    if (ok) shown += 1;
  }
  const out = document.getElementById("shown");
  if (out) out.textContent = shown.toLocaleString("en-US");
}

function setupBundleFilters() {
  const form = document.getElementById("filters");
  if (!form || document.body.dataset.mode !== "bundle") return;
  const params = new URLSearchParams(window.location.search);
  for (const el of form.elements) {
    if (el.name && params.has(el.name)) el.value = params.get(el.name);
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); filterTrials(form); });
  form.addEventListener("change", () => filterTrials(form));
  filterTrials(form);
}

function setupTimeline() {
  const box = document.querySelector(".timeline-filter");
  if (!box) return;
  box.hidden = false;
  box.addEventListener("change", () => {
    const off = new Set([...box.querySelectorAll("input:not(:checked)")].map((i) => i.dataset.kind));
    for (const li of document.querySelectorAll("ol.timeline li.step")) {
      li.hidden = off.has(li.dataset.kind);
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setupBundleFilters();
  setupTimeline();
  document.body.dataset.ready = "1";
});
