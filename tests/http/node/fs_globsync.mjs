// Node 20 for the MCP conformance suite (tests/http/test_conformance.py): the suite
// imports `globSync` from "fs", which Node has only from 22. Loaded with
// `node --import`, this maps the suite's own "fs" import to node:fs plus globSync from
// the glob package (installed beside it, Makefile NPM_PACKAGES); nothing else changes.
// On Node >= 22 the test runs without it.
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

if (isMainThread) register(import.meta.url); // the hooks below run in their own thread

const SUITE = "/node_modules/@modelcontextprotocol/conformance/";
// A module that exists only here, named as if beside the suite's files so that "glob"
// resolves from the suite's node_modules.
const SHIM = "fs-with-globsync.mjs";

export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL ?? "";
  if ((specifier === "fs" || specifier === "node:fs") && parent.includes(SUITE)) {
    if (!parent.endsWith(SHIM)) {
      return { url: new URL(SHIM, parent).href, shortCircuit: true };
    }
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url.includes(SUITE) && url.endsWith(SHIM)) {
    const source = [
      'export * from "node:fs";',
      'export { default } from "node:fs";',
      'export { globSync } from "glob";',
    ].join("\n");
    return { format: "module", source, shortCircuit: true };
  }
  return nextLoad(url, context);
}
