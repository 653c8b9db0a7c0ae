// Drives `omp --mode rpc` (OMP_BIN) with the reference 18.1.21 RpcClient
// (RPC_CLIENT, an absolute path to its src/modes/rpc/rpc-client.ts): a
// prompt, then a prompt over the 1 MiB line limit whose message must come
// back whole through getMessages (protocol 2: chunked frames and pages).
const { RpcClient } = await import(process.env.RPC_CLIENT!);

const client = new RpcClient({
	command: [process.env.OMP_BIN!],
	cwd: process.cwd(),
	model: "fake/fake-model",
	sessionDir: process.env.SESSION_DIR,
});
try {
	await client.start();
	const events = await client.promptAndWait("hello from the 18.1.21 RpcClient", undefined, 30000);
	if (!events.some((e: any) => e.type === "agent_end")) throw new Error("promptAndWait ended without agent_end");
	console.log("rpc121: ok: promptAndWait");
	await client.promptAndWait(`a long one: ${"x".repeat(1_500_000)}`, undefined, 30000);
	const messages = await client.getMessages();
	if (!messages.some((m: any) => JSON.stringify(m).length > 1_400_000)) throw new Error("the 1.5 MB message did not come back whole");
	console.log(`rpc121: ok: getMessages returned ${messages.length} messages, the 1.5 MB one whole`);
} catch (e) {
	console.error(`rpc121: FAIL: ${String(e)}`);
	process.exit(1);
} finally {
	await client.stop();
}
