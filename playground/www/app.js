// Moves text between the page and the policy's core (pkg/, built by `make playground`).
// Every decision, parse, error and rendering comes from Rust: this file only builds elements.
import init, { preview_json, examples_json, versions_json } from "./pkg/playground.js";

const $ = (id) => document.getElementById(id);
const inputs = ["manifest", "namespace", "settings"];

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c !== undefined && c !== null) node.append(c);
  }
  return node;
}

function showErrors(errors) {
  for (const name of inputs) {
    const box = $(`${name}-error`);
    const mine = errors.filter((e) => e.input === name);
    box.replaceChildren(
      ...mine.map((e) =>
        el("div", { class: "error-line", "data-line": e.line },
          e.line ? el("span", { class: "where" }, `line ${e.line}${e.column ? `, column ${e.column}` : ""}`) : null,
          e.message),
      ),
    );
    box.hidden = mine.length === 0;
    $(name).classList.toggle("invalid", mine.length > 0);
  }
}

// Selects line `n` (1-based) of a textarea, so a click on an error shows where it is.
function goToLine(textarea, n) {
  const lines = textarea.value.split("\n");
  const start = lines.slice(0, n - 1).reduce((sum, l) => sum + l.length + 1, 0);
  textarea.focus();
  textarea.setSelectionRange(start, start + (lines[n - 1] ?? "").length);
  const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  textarea.scrollTop = Math.max(0, (n - 3) * lineHeight);
}

function verdictCard(o, many) {
  const title = `${o.kind} ${o.namespace}/${o.name}`;
  return el("article", { class: `verdict ${o.verdict}`, "data-verdict": o.verdict },
    el("h2", {}, el("span", { class: "badge" }, o.verdict), " ", title),
    el("p", { class: "headline" }, o.headline,
      o.line ? el("span", { class: "where" }, ` (manifest line ${o.line})`) : null),
    o.reasons.length
      ? el("ul", { class: "reasons" },
          o.reasons.map((r) => el("li", {}, el("code", {}, r.code), " ", r.text)))
      : null,
    o.warnings.length
      ? el("ul", { class: "warnings" }, o.warnings.map((w) => el("li", {}, "⚠ ", w)))
      : null,
    many ? null : auditList(o),
  );
}

function auditList(o) {
  const entries = Object.entries(o.auditAnnotations);
  if (!entries.length) return null;
  return el("p", { class: "audit" }, "audit annotations: ",
    entries.map(([k, v], i) => [i ? "; " : "", el("code", {}, k), `: ${v}`]));
}

const sectionTitles = {
  initContainers: "Init containers",
  containers: "Containers",
  volumes: "Volumes",
  labels: "Labels",
  annotations: "Annotations",
  other: "Other fields",
};

function changesPanel(objects) {
  const parts = [];
  for (const o of objects) {
    const block = el("div", { class: "object-changes" });
    if (objects.length > 1) block.append(el("h3", {}, `${o.kind} ${o.name}`));
    if (!o.changes.length) {
      block.append(el("p", { class: "nothing" }, "Nothing added."));
    }
    for (const [section, title] of Object.entries(sectionTitles)) {
      const mine = o.changes.filter((c) => c.section === section);
      if (!mine.length) continue;
      const list = el("ul", { class: `changes ${section}`, "data-section": section });
      for (const c of mine) {
        const where = c.index !== null && c.index !== undefined ? ` at ${section}[${c.index}]` : "";
        const sign = c.change === "added" ? "+" : "~";
        if (section === "labels" || section === "annotations") {
          list.append(el("li", { class: c.change },
            el("span", { class: "sign" }, sign), " ", el("code", {}, c.name), ": ", el("code", {}, c.value),
            c.before !== null && c.before !== undefined ? el("span", { class: "before" }, ` (was ${c.before})`) : null));
        } else {
          list.append(el("li", { class: c.change },
            el("details", {},
              el("summary", {}, el("span", { class: "sign" }, sign), " ", el("code", {}, c.name), where),
              el("pre", {}, c.value))));
        }
      }
      block.append(el("h4", {}, title, el("small", {}, ` ${mine[0].at}`)), list);
    }
    parts.push(block);
  }
  return parts;
}

function patchPanel(objects) {
  return objects.map((o) =>
    el("div", {},
      objects.length > 1 ? el("h3", {}, `${o.kind} ${o.name}`) : null,
      el("pre", { class: "patch" }, o.patchText)));
}

function render(result) {
  showErrors(result.errors);
  const invalid = result.errors.length > 0;
  document.body.classList.toggle("has-errors", invalid);
  $("status").textContent = invalid
    ? "fix the input marked in red"
    : `${result.objects.length} object${result.objects.length === 1 ? "" : "s"} admitted`;
  if (invalid) return; // keep the last good result visible, dimmed
  const many = result.objects.length > 1;
  $("verdicts").replaceChildren(...result.objects.map((o) => verdictCard(o, many)));
  $("notes").replaceChildren(...result.notes.map((n) => el("li", {}, n)));
  $("panel-changes").replaceChildren(...changesPanel(result.objects));
  $("injected-yaml").textContent = result.injectedYaml;
  $("panel-patch").replaceChildren(...patchPanel(result.objects));
}

function run() {
  let text;
  try {
    text = preview_json($("manifest").value, $("namespace").value, $("settings").value);
  } catch (e) {
    // The core never panics on input; if it ever does, say so rather than fail silently.
    $("status").textContent = `internal error in the policy core: ${e}`;
    $("status").classList.add("failed");
    return;
  }
  $("status").classList.remove("failed");
  render(JSON.parse(text));
}

function load(example) {
  $("manifest").value = example.manifest;
  $("namespace").value = example.namespace;
  $("settings").value = example.settings;
  run();
}

function selectTab(name) {
  for (const b of document.querySelectorAll("[role=tab]")) {
    b.setAttribute("aria-selected", String(b.dataset.tab === name));
  }
  for (const p of document.querySelectorAll(".panel")) {
    p.hidden = p.id !== `panel-${name}`;
  }
}

async function main() {
  await init();
  const versions = JSON.parse(versions_json());
  $("versions").textContent = `(policy ${versions.policy}, Linkerd ${versions.linkerd})`;
  const examples = JSON.parse(examples_json());
  const select = $("example");
  select.replaceChildren(
    ...examples.map((e) => el("option", { value: e.id }, e.title)),
    el("option", { value: "", disabled: "" }, "(your own input)"),
  );
  select.addEventListener("change", () => load(examples.find((e) => e.id === select.value)));
  let timer;
  for (const name of inputs) {
    $(name).addEventListener("input", () => {
      select.value = "";
      clearTimeout(timer);
      timer = setTimeout(run, 150);
    });
    $(`${name}-error`).addEventListener("click", (event) => {
      const line = Number(event.target.closest("[data-line]")?.dataset.line);
      if (line) goToLine($(name), line);
    });
  }
  for (const b of document.querySelectorAll("[role=tab]")) {
    b.addEventListener("click", () => selectTab(b.dataset.tab));
  }
  for (const b of document.querySelectorAll("[data-copy]")) {
    b.addEventListener("click", () => navigator.clipboard?.writeText($(b.dataset.copy).textContent));
  }
  load(examples[0]);
  document.body.dataset.ready = "true";
}

main().catch((e) => {
  $("status").textContent = `could not start the policy: ${e}`;
  $("status").classList.add("failed");
  console.error(e);
});
