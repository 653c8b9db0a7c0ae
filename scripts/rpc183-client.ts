// Drives `omp --mode rpc` (OMP_BIN) with the reference 18.3.4 RpcClient,
// loaded from the 18.3.4 package's sources (RPC_CLIENT, an absolute path to
// src/modes/rpc/rpc-client.ts); the client negotiates protocol 2. Prints one "ok: ..." line per check and
// exits 1 on the first failure.
const { RpcClient } = await import(process.env.RPC_CLIENT!);

function fail(msg: string): never {
	console.error(`rpc183: FAIL: ${msg}`);
	process.exit(1);
}
function check(cond: unknown, msg: string) {
	if (!cond) fail(msg);
	console.log(`rpc183: ok: ${msg}`);
}

const client = new RpcClient({
	command: [process.env.OMP_BIN!],
	cwd: process.cwd(),
	model: "fake/fake-model",
	sessionDir: process.env.SESSION_DIR,
});
const results: any[] = [];
client.onPromptResult((r: any) => results.push(r));
let settled = 0;
client.onSessionSettled(() => settled++);
try {
	await client.start();
	check(true, "started");

	const events = await client.promptAndWait("hello from the 18.3.4 RpcClient", undefined, 30000);
	check(events.some((e: any) => e.type === "agent_end"), "promptAndWait resolved after agent_end");
	const starts = events.filter((e: any) => e.type === "message_start");
	check(starts.length > 0 && starts.every((e: any) => typeof e.messageId === "string" && /^msg-\d+$/.test(e.messageId)),
		"message_start frames carry messageId msg-<n>");
	check(results.length === 1 && results[0].status === "completed" && results[0].agentInvoked === true,
		`one prompt_result, completed (${JSON.stringify(results)})`);

	await client.waitForSettled(30000);
	const state = await client.getState();
	check(state.isSettled === true && state.hasPendingAsyncWork === false, "get_state: isSettled, no pending async work");

	const second = await client.promptAndWait("a second turn", undefined, 30000);
	check(second.some((e: any) => e.type === "agent_end") && results.length === 2, "a second promptAndWait");
	const ids = new Set([...events, ...second].filter((e: any) => e.type === "message_start").map((e: any) => e.messageId));
	check(ids.size === [...events, ...second].filter((e: any) => e.type === "message_start").length,
		"messageId unique per message");

	const { entries, leafId } = await client.getEntries();
	check(Array.isArray(entries) && entries.length > 0 && typeof leafId === "string", `get_entries: ${entries.length} entries`);
	try {
		await client.getEntries("no-such-entry");
		fail("get_entries with an unknown since succeeded");
	} catch (e) {
		check(/./.test(String(e)), `get_entries unknown since rejected: ${String(e).slice(0, 80)}`);
	}
	const tree = await client.getTree();
	check(Array.isArray(tree.tree) && tree.leafId === leafId, "get_tree: same leaf as get_entries");
	const levels = await client.getAvailableThinkingLevels();
	check(Array.isArray(levels), `get_available_thinking_levels: ${JSON.stringify(levels)}`);
	const filter = await client.setEventFilter(["agent_end"]);
	check(JSON.stringify(filter) === JSON.stringify(["agent_end"]), "set_event_filter echoes the filter");
	await client.setEventFilter(null);
	check(settled >= 1, `session_settled seen ${settled} time(s)`);

	// A message over the 1 MiB line limit: getMessages pages under protocol 2,
	// and the page holding it arrives as rpc_chunk frames the client
	// reassembles (under protocol 1 get_messages would fail instead).
	const image = { type: "image", data: Buffer.alloc(300_000, 7).toString("base64"), mimeType: "image/png" };
	await client.promptAndWait("three large images", [image, image, image], 30000);
	const messages = await client.getMessages();
	const user = messages.find((m: any) => m.role === "user" && JSON.stringify(m).includes("three large images"));
	check(user && JSON.stringify(user).length > 1 << 20 && user.content.filter((c: any) => c.data === image.data).length === 3,
		`protocol 2: a ${user ? JSON.stringify(user).length : 0}-byte message arrives whole through getMessages`);
} catch (e) {
	fail(String(e));
} finally {
	await client.stop();
}
