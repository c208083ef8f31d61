// Package rollout persists threads the way codex-cli 0.169 does, so history moves freely between the reference
// and us: one JSONL file per thread at $CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl,
// one record per line {"timestamp","ordinal","type","payload"}.
//
// # Format (observed from the reference)
//
// The first record is session_meta (id, session_id, timestamp, cwd, originator, cli_version, source,
// model_provider, base_instructions, history_mode "paginated", forks add forked_from_id and history_base). A turn
// is event_msg task_started{turn_id, started_at}, then turn_context, the response_item records (the exact Responses
// API items the model saw and produced), event_msg item_completed{thread_id, turn_id, item, started_at_ms,
// completed_at_ms} for every UI item (item types UserMessage, AgentMessage, Reasoning, CommandExecution,
// McpToolCall, …), token_usage_record and event_msg token_count after each model response, and finally event_msg
// task_complete{turn_id, last_agent_message, error?, started_at, completed_at, duration_ms} or
// turn_aborted{turn_id, reason:"interrupted", …}. The reference does not record the legacy user_message /
// agent_message events in paginated files any more; files without history_mode "paginated" (older versions,
// imports) are legacy: rebuilt from those legacy events with their item_completed events ignored, and a turn
// run on one appends user_message / agent_reasoning / agent_message (nothing for other items), as the
// reference does. A legacy thread's fork is legacy too and copies its parent's records (no history_base).
// Names are not in the rollout:
// thread/name/set appends {"id","thread_name","updated_at"} to $CODEX_HOME/session_index.jsonl. Archiving moves
// the file to $CODEX_HOME/archived_sessions/. The reference lists threads from its own SQLite files but picks up
// rollouts written by others (including ours) at its next thread/list, and resumes and appends to them.
//
// # Writing, reading
//
// Recorder appends records; each append is a single write(2) of a whole line under a mutex, so a SIGKILL leaves
// every finished line intact and concurrent appends never interleave. ReadFile streams a file line by line
// (bounded line buffer, no whole-file copy), skips torn or garbage lines with a warning, and rebuilds both the model
// history (response items, compactions applied) and the turns as thread/read returns them; a turn left open by a
// crash is "interrupted". ReadMeta reads only what listing needs. Rollouts the reference compressed
// (rollout-….jsonl.zst, see CompressedSuffix) are read in place; Materialize writes one back as plain JSONL before
// a thread is appended to.
//
// # Index
//
// Store keeps every thread's Summary in memory, sorted by (created_at, id) and (updated_at, id), so a page of
// thread/list is a binary search plus a short scan (microseconds at 50 000 threads). The in-memory index is
// persisted as $CODEX_HOME/appserver_index_v1.jsonl, one JSON entry per line carrying the file's size and mtime;
// updates are appended, and the file is rewritten atomically when Open finds it stale or bloated. Open reconciles
// the index with the disk by listing the day directories and stat-ing each rollout: unknown, grown or touched files
// are re-read with ReadMeta, vanished ones dropped, so the rollouts stay the source of truth and threads written
// by the reference appear. While open, List relists directories whose mtime changed (at most every 2 s) to see
// rollouts created behind our back. We chose this over SQLite because it needs no dependency, a cold start is
// dominated by the unavoidable stat of each file either way, and a corrupt or missing index is simply rebuilt.
// updated_at is the rollout's mtime, as in the reference.
package rollout
