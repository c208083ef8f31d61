package auth

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStoreAPIKey(t *testing.T) {
	home := t.TempDir()
	s := NewStore(home)
	require.Empty(t, s.APIKey())
	require.NoError(t, s.SaveAPIKey("sk-1"))
	st, err := os.Stat(filepath.Join(home, FileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.Equal(t, "sk-1", s.APIKey())
	env := s.Getenv(func(string) string { return "" })
	require.Equal(t, "sk-1", env(APIKeyEnv), "stored key stands in for an unset OPENAI_API_KEY")
	require.Empty(t, env("OTHER"))
	require.Equal(t, "from-env", s.Getenv(func(string) string { return "from-env" })(APIKeyEnv))
	had, err := s.Remove()
	require.NoError(t, err)
	require.True(t, had)
	had, err = s.Remove()
	require.NoError(t, err)
	require.False(t, had)
}

func TestBrowserLoginCancel(t *testing.T) {
	done := make(chan Outcome, 2)
	l := &Logins{Done: func(o Outcome) { done <- o }, Addr: "127.0.0.1:0"}
	id, authURL, err := l.StartBrowser("probe")
	require.NoError(t, err)
	u, err := url.Parse(authURL)
	require.NoError(t, err)
	require.Equal(t, "auth.openai.com", u.Host)
	q := u.Query()
	require.Equal(t, ClientID, q.Get("client_id"))
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Equal(t, "probe", q.Get("originator"))
	redirect := q.Get("redirect_uri")
	require.True(t, strings.HasPrefix(redirect, "http://localhost:"))

	// A callback with the wrong state is refused and the login stays pending.
	resp, err := http.Get(strings.Replace(redirect, "localhost", "127.0.0.1", 1) + "?state=wrong&code=x")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	require.False(t, l.Cancel("other"))
	require.True(t, l.Cancel(id))
	select {
	case o := <-done:
		require.Equal(t, id, o.LoginID)
		require.ErrorIs(t, o.Err, ErrNotCompleted)
	case <-time.After(time.Minute):
		t.Fatal("no outcome")
	}
	require.False(t, l.Cancel(id), "already finished")
}

func TestStartingALoginEndsThePendingOne(t *testing.T) {
	done := make(chan Outcome, 2)
	l := &Logins{Done: func(o Outcome) { done <- o }, Addr: "127.0.0.1:0"}
	first, _, err := l.StartBrowser("x")
	require.NoError(t, err)
	_, _, err = l.StartBrowser("x")
	require.NoError(t, err)
	o := <-done
	require.Equal(t, first, o.LoginID)
	l.Close()
	<-done
}

func TestDeviceCodeWithoutNetwork(t *testing.T) {
	l := &Logins{HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, context.DeadlineExceeded })}}
	err := l.RequestDeviceCode(context.Background())
	require.EqualError(t, err, "failed to request device code: error sending request for url ("+DeviceCodeURL+")")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDiscoverAWS(t *testing.T) {
	dir := t.TempDir()
	cfg, creds := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(cfg, []byte("[default]\nregion = us-west-2\n[profile dev]\nregion=eu-west-1\n[sso-session s]\n"), 0o600))
	require.NoError(t, os.WriteFile(creds, []byte("[other]\naws_access_key_id = a\naws_secret_access_key = b\n"), 0o600))
	env := map[string]string{"AWS_CONFIG_FILE": cfg, "AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_BEARER_TOKEN_BEDROCK": "t", "AWS_DEFAULT_REGION": "us-east-1"}
	getenv := func(k string) string { return env[k] }
	profiles, envCreds := DiscoverAWS(getenv)
	require.Equal(t, []AWSProfile{{"default", "us-west-2"}, {"dev", "eu-west-1"}, {"other", ""}}, profiles)
	require.Equal(t, []AWSEnvCredential{{"bedrockApiKey", "us-east-1"}}, envCreds)
	require.NoError(t, CheckAWSProfile(getenv, "other"))
	require.ErrorContains(t, CheckAWSProfile(getenv, "dev"), "was not enabled")
	require.NoError(t, CheckBedrockRegion("us-east-1"))
	require.EqualError(t, CheckBedrockRegion("mars-1"), "Amazon Bedrock does not support region `mars-1`")
}
