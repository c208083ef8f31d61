// Drives @openai/codex-sdk against an exec binary: a three-turn thread (start, resume, output schema).
// Usage: node sdk_thread.mjs <codex-sdk dist/index.js> <binary> <working dir>
// Prints one JSON document: the thread id seen after each turn and each turn's result.
const [sdkPath, binary, workdir] = process.argv.slice(2);
const { Codex } = await import(sdkPath);

const codex = new Codex({ codexPathOverride: binary });
const thread = codex.startThread({ workingDirectory: workdir, skipGitRepoCheck: true });
const turns = [];
const first = await thread.run("first turn");
turns.push({ id: thread.id, ...first });
const second = await thread.run("second turn");
turns.push({ id: thread.id, ...second });
const schema = {
  type: "object",
  properties: { answer: { type: "string" } },
  required: ["answer"],
  additionalProperties: false,
};
const third = await thread.run("structured turn", { outputSchema: schema });
turns.push({ id: thread.id, ...third, parsed: JSON.parse(third.finalResponse) });

// A resumed thread object (a new process per turn, as always) continues the same thread.
const again = codex.resumeThread(thread.id, { workingDirectory: workdir, skipGitRepoCheck: true });
const fourth = await again.run("fourth turn");
turns.push({ id: again.id, ...fourth });

let failure = null;
try {
  await again.run("this one fails");
} catch (err) {
  failure = String(err.message);
}
process.stdout.write(JSON.stringify({ turns, failure }) + "\n");
