// Reads or writes an auth-broker snapshot cache file with the reference
// implementation's own code (@oh-my-pi/pi-ai, src/auth-broker/snapshot-cache.ts),
// so the Go cache is tested byte-compatible in both directions. Run with the
// reference's bun, from the directory that holds its node_modules:
//
//   bun snapcache-ref.ts write <cache> <token> <url> <snapshot.json>
//   bun snapcache-ref.ts read  <cache> <token> <url> <ttlMs> [nowMs]
//
// `read` prints the snapshot as JSON, or `null` on a miss.
import * as fs from "node:fs";
import * as path from "node:path";

const refDir = process.env.OMP_INTEROP_REF ?? ".interop";
const mod = path.resolve(refDir, "node_modules/@oh-my-pi/pi-ai/src/auth-broker/snapshot-cache.ts");
const { readAuthBrokerSnapshotCache, writeAuthBrokerSnapshotCache } = await import(mod);

const [cmd, file, token, url, arg, nowArg] = process.argv.slice(2);
if (cmd === "write") {
	const snapshot = JSON.parse(fs.readFileSync(arg, "utf8"));
	await writeAuthBrokerSnapshotCache({ path: file, token, url, snapshot });
} else if (cmd === "read") {
	const now = nowArg ? Number(nowArg) : undefined;
	const snap = await readAuthBrokerSnapshotCache({
		path: file,
		token,
		url,
		ttlMs: Number(arg),
		now: now === undefined ? undefined : () => now,
	});
	process.stdout.write(`${JSON.stringify(snap)}\n`);
} else {
	console.error("usage: snapcache-ref.ts write|read <cache> <token> <url> <snapshot.json|ttlMs> [nowMs]");
	process.exit(2);
}
