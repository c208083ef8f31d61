package server

import (
	"context"

	"appserver/jsonrpc"
	protocol "appserver/protocol/v2"
)

// addMaintenanceRoutes routes rollout/compress and feedback/upload.
func (s *Server) addMaintenanceRoutes(r map[string]route) {
	r[protocol.MethodRolloutCompress] = handle(s.rolloutCompress)
	r[protocol.MethodFeedbackUpload] = handle(s.feedbackUpload)
}

// rolloutCompress acknowledges the trigger as the reference does (its answer promises no work: locks
// and cooldowns may skip the pass). appserver keeps every rollout as plain JSONL, so its pass always
// skips; the log says so.
func (s *Server) rolloutCompress(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *struct{}) (any, error) {
	s.log.Info("rollout/compress: appserver keeps rollouts uncompressed; nothing to do", "codexHome", s.cfg.CodexHome)
	return protocol.RolloutCompressResponse{}, nil
}

// feedbackUploadUnavailable is the reason feedback/upload fails: the reference sends reports to
// OpenAI's Sentry project, a cloud service appserver does not talk to (feedback/save keeps a local copy).
const feedbackUploadUnavailable = "failed to upload feedback: failed to upload feedback to Sentry: appserver does not send feedback to OpenAI (use feedback/save for a local report)"

func (s *Server) feedbackUpload(_ context.Context, _ *connection, _ *jsonrpc.Request, _ *protocol.FeedbackUploadParams) (any, error) {
	return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", feedbackUploadUnavailable)
}
