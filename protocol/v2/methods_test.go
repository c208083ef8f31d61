package protocol_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	protocol "appserver/protocol/v2"
)

func TestMethodTables(t *testing.T) {
	require.Len(t, protocol.ClientRequests, 184)
	require.Len(t, protocol.ServerRequests, 11)
	require.Len(t, protocol.ServerNotifications, 86)
	require.Len(t, protocol.ClientNotifications, 1)

	experimental := 0
	for _, s := range protocol.ClientRequests {
		if s.Experimental {
			experimental++
		}
	}
	require.Equal(t, 184-109, experimental)

	names := protocol.ClientRequestNames()
	require.Equal(t, []string{"initialize", "server/diagnostics"}, names[:2])
	require.Contains(t, names, protocol.MethodThreadStart)
	require.Equal(t, "thread/start", protocol.MethodThreadStart)
	require.Equal(t, "thread/started", protocol.NotifyThreadStarted)
	require.Equal(t, "item/commandExecution/requestApproval", protocol.ServerRequestItemCommandExecutionRequestApproval)
	require.Equal(t, "initialized", protocol.ClientNotifyInitialized)
}

func TestMethodSpecs(t *testing.T) {
	start, ok := protocol.LookupClientRequest("thread/start")
	require.True(t, ok)
	require.Equal(t, "ThreadStartParams", start.ParamsType)
	require.True(t, start.ParamsRequired)
	require.False(t, start.Experimental)
	require.IsType(t, &protocol.ThreadStartParams{}, start.NewParams())
	require.IsType(t, &protocol.ThreadStartResponse{}, start.NewResult())
	require.Contains(t, start.ExperimentalFields, "mockExperimentalField")
	require.NotContains(t, start.ExperimentalFields, "model")

	inc, ok := protocol.LookupClientRequest("thread/increment_elicitation")
	require.True(t, ok)
	require.True(t, inc.Experimental)

	logout, _ := protocol.LookupClientRequest("account/logout")
	require.Empty(t, logout.ParamsType)
	require.Nil(t, logout.NewParams)
	require.Equal(t, "LogoutAccountResponse", logout.ResultType)

	reload, _ := protocol.LookupClientRequest("config/mcpServer/reload")
	require.Equal(t, "McpServerRefreshResponse", reload.ResultType)
	write, _ := protocol.LookupClientRequest("config/value/write")
	require.Equal(t, "ConfigWriteResponse", write.ResultType)
	rl, _ := protocol.LookupClientRequest("account/rateLimits/read")
	require.Equal(t, "GetAccountRateLimitsParams", rl.ParamsType)
	require.False(t, rl.ParamsRequired)

	_, ok = protocol.LookupClientRequest("no/such")
	require.False(t, ok)

	appr, ok := protocol.LookupServerRequest(protocol.ServerRequestItemCommandExecutionRequestApproval)
	require.True(t, ok)
	require.IsType(t, &protocol.CommandExecutionRequestApprovalParams{}, appr.NewParams())
	require.IsType(t, &protocol.CommandExecutionRequestApprovalResponse{}, appr.NewResult())

	n, ok := protocol.LookupServerNotification(protocol.NotifyItemCompleted)
	require.True(t, ok)
	require.IsType(t, &protocol.ItemCompletedNotification{}, n.NewParams())
}

// TestEveryTypeNameMatches checks that each spec's type names name what its constructors return.
func TestEveryTypeNameMatches(t *testing.T) {
	for _, table := range [][]protocol.MethodSpec{protocol.ClientRequests, protocol.ServerRequests,
		protocol.ServerNotifications, protocol.ClientNotifications} {
		for _, s := range table {
			if s.NewParams != nil {
				require.Equal(t, s.ParamsType, reflect.TypeOf(s.NewParams()).Elem().Name(), s.Name)
			} else {
				require.Empty(t, s.ParamsType, s.Name)
			}
			if s.NewResult != nil {
				require.Equal(t, s.ResultType, reflect.TypeOf(s.NewResult()).Elem().Name(), s.Name)
			}
		}
	}
	for _, s := range append(append([]protocol.MethodSpec{}, protocol.ClientRequests...), protocol.ServerRequests...) {
		require.NotNil(t, s.NewResult, "%s has no result type", s.Name)
	}
}
