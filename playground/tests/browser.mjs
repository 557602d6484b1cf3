// Browser test of the playground: the page built by `make playground`, served locally, in the
// system's headless Chromium driven by playwright-core. Pastes Linkerd's fixtures and checks what
// the page shows; writes screenshots to target/playground/.
//
//   node playground/tests/browser.mjs            (CHROMIUM=/path overrides /usr/bin/chromium)
//   UPDATE_SCREENSHOT=1 node ...                 also refreshes playground/screenshot.png
import { chromium } from "playwright-core";
import { mkdtemp, mkdir, readFile, rm, copyFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "../serve.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const ROOT = resolve(here, "../..");
const OUT = resolve(ROOT, process.env.PLAYGROUND_TEST_OUT ?? "target/playground");
const FIXTURES = join(ROOT, "tests/fixtures/linkerd/controller/proxy-injector/fake/data");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const DEADLINE_MS = 180_000;

let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
  if (ok) {
    passed += 1;
    console.log(`ok - ${name}`);
  } else {
    failed += 1;
    console.log(`not ok - ${name}${detail ? `: ${detail}` : ""}`);
  }
}

const fixture = (name) => readFile(join(FIXTURES, name), "utf8");
const text = (page, selector) => page.locator(selector).first().textContent();

/** Fills the inputs and waits until the page shows a result for `objectTitle` (or errors). */
async function paste(page, { manifest, namespace, settings }, waitFor) {
  if (namespace !== undefined) await page.fill("#namespace", namespace);
  if (settings !== undefined) await page.fill("#settings", settings);
  if (manifest !== undefined) await page.fill("#manifest", manifest);
  await page.waitForFunction(waitFor, null, { timeout: 15_000 });
}

async function run(page, url) {
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));

  const started = Date.now();
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]", { timeout: 30_000 });
  console.log(`# page ready in ${Date.now() - started} ms`);

  // The prefilled example: a Deployment in a namespace with linkerd.io/inject: enabled.
  check("example loads injected", (await page.getAttribute("#verdicts article", "data-verdict")) === "injected");
  const exampleYaml = await text(page, "#injected-yaml");
  check("example: template labelled with its Deployment", exampleYaml.includes("linkerd.io/proxy-deployment: web"));
  await mkdir(OUT, { recursive: true });
  await page.screenshot({ path: join(OUT, "screenshot.png") });
  if (process.env.UPDATE_SCREENSHOT) await copyFile(join(OUT, "screenshot.png"), join(ROOT, "playground/screenshot.png"));

  // 1. Linkerd's fixture pod (linkerd.io/inject: enabled on the pod), no namespace annotations.
  const pod = await fixture("pod-inject-enabled.yaml");
  await paste(page, { manifest: pod, namespace: "" }, () =>
    document.querySelector("#verdicts article h2")?.textContent.includes("Pod kube-public/nginx"),
  );
  check("fixture pod: verdict injected", (await page.getAttribute("#verdicts article", "data-verdict")) === "injected");
  const injected = await text(page, "#injected-yaml");
  for (const needle of [
    "name: linkerd-proxy",
    "name: linkerd-init",
    "linkerd.io/control-plane-ns: linkerd",
    "linkerd.io/workload-ns: kube-public",
    "app: nginx",
    "linkerd.io/proxy-version:",
    "linkerd.io/trust-root-sha256:",
  ]) {
    check(`fixture pod: injected YAML has ${needle}`, injected.includes(needle));
  }
  const added = async (section) =>
    page.locator(`#panel-changes ul[data-section=${section}] li code`).allTextContents();
  const init = await added("initContainers");
  check("fixture pod: diff lists linkerd-init and linkerd-proxy as init containers",
    init.includes("linkerd-init") && init.includes("linkerd-proxy"), init.join(", "));
  const labels = await added("labels");
  check("fixture pod: diff lists the labels", labels.includes("linkerd.io/control-plane-ns") &&
    labels.includes("linkerd.io/workload-ns"), labels.join(", "));
  const annotations = await added("annotations");
  check("fixture pod: diff lists the annotations", annotations.includes("linkerd.io/created-by") &&
    annotations.includes("linkerd.io/trust-root-sha256"), annotations.join(", "));
  const volumes = await added("volumes");
  check("fixture pod: diff lists the volumes", volumes.includes("linkerd-identity-end-entity"), volumes.join(", "));
  await page.click("button[data-tab=patch]");
  const patch = await text(page, "#panel-patch");
  check("fixture pod: JSON patch shown", patch.includes('"op": "add"') && patch.includes("/spec/initContainers"));
  await page.click("button[data-tab=changes]");

  // 2. The same pod on the host's network: skipped, with Linkerd's reason.
  const hostNetwork = pod.replace("spec:\n", "spec:\n  hostNetwork: true\n");
  await paste(page, { manifest: hostNetwork }, () =>
    document.querySelector("#verdicts article")?.dataset.verdict === "skipped",
  );
  const reasons = await text(page, "#verdicts .reasons");
  check("hostNetwork pod: skip reason shown", reasons.includes("host_network_enabled") &&
    reasons.includes("hostNetwork is enabled"), reasons);
  const skippedYaml = await text(page, "#injected-yaml");
  check("hostNetwork pod: no proxy, reason annotated", !skippedYaml.includes("linkerd-proxy") &&
    skippedYaml.includes("linkerd.io/injection-skipped: hostNetwork is enabled"));
  await page.screenshot({ path: join(OUT, "skipped.png") });

  // 3. Invalid YAML: the error sits under the manifest and names the line.
  const broken = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: broken\n   labels: {}\nspec: {}\n";
  await paste(page, { manifest: broken }, () => !document.querySelector("#manifest-error").hidden);
  const manifestError = await text(page, "#manifest-error");
  check("invalid YAML: error names line 5", manifestError.includes("line 5"), manifestError);
  check("invalid YAML: manifest marked invalid", await page.locator("#manifest.invalid").count() === 1);
  await page.click("#manifest-error [data-line]");
  const selected = await page.evaluate(() => {
    const t = document.querySelector("#manifest");
    return t.value.slice(t.selectionStart, t.selectionEnd);
  });
  check("invalid YAML: clicking the error selects line 5", selected === "   labels: {}", JSON.stringify(selected));
  await page.screenshot({ path: join(OUT, "error.png") });

  // 4. An invalid setting: the error sits under the settings, with the key and its line.
  await paste(page, { manifest: pod, settings: "proxy:\n  ports:\n    admin: 0\n" }, () =>
    document.querySelector("#manifest-error").hidden && !document.querySelector("#settings-error").hidden,
  );
  const settingsError = await text(page, "#settings-error");
  check("invalid setting: key and line 3 shown", settingsError.includes("settings.proxy.ports.admin") &&
    settingsError.includes("line 3"), settingsError);

  // 5. Fixed again: the result comes back.
  await paste(page, { settings: "" }, () =>
    document.querySelector("#settings-error").hidden &&
    document.querySelector("#verdicts article")?.dataset.verdict === "injected",
  );
  const notes = await text(page, "#notes");
  check("no trust bundle: example bundle note shown", notes.includes("EXAMPLE"), notes);

  check("no page errors", problems.length === 0, problems.join("; "));
}

/** Debian's Chromium, headless. */
function launch(profile) {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
    viewport: { width: 1440, height: 1000 },
  });
}

/** The browser, launched again once if it dies while starting (seen: Chromium killed by SIGSEGV
 * before its first page, on a machine where the next launch worked). Nothing of the page is
 * tested before this returns, so no check is retried. */
async function launchOnce(profile) {
  try {
    return await launch(profile);
  } catch (e) {
    console.log(`# Chromium did not start (${String(e).split("\n")[0]}); launching it again`);
    // a fresh profile: the dead browser's lock files would be in the old one
    await rm(profile, { recursive: true, force: true });
    await mkdir(profile, { recursive: true });
    return await launch(profile);
  }
}

async function main() {
  const { server, url } = await serve();
  const profile = await mkdtemp(join(tmpdir(), "playground-chromium-"));
  let context;
  const timer = setTimeout(() => {
    console.log(`not ok - deadline of ${DEADLINE_MS / 1000} s exceeded`);
    process.exit(1);
  }, DEADLINE_MS);
  try {
    context = await launchOnce(profile);
    const page = context.pages()[0] ?? (await context.newPage());
    await run(page, url);
  } catch (e) {
    check("browser test ran to the end", false, e.stack ?? String(e));
  } finally {
    clearTimeout(timer);
    await context?.close().catch(() => {});
    server.close();
    await rm(profile, { recursive: true, force: true });
  }
  console.log(`# screenshots in ${OUT}`);
  console.log(`browser: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

await main();
