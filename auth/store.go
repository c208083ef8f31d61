// Package auth keeps the account credentials in $CODEX_HOME/auth.json (mode 0600, replaced atomically)
// as the reference lays them out, serves the stored API key to model requests, and runs the ChatGPT login
// flows (browser redirect to a local callback server, device code) as far as they go without the
// network.
package auth

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"appserver/configedit"
)

// FileName is the credentials file inside CODEX_HOME.
const FileName = "auth.json"

// Modes stored in auth.json's auth_mode.
const (
	ModeAPIKey = "apikey"
)

// APIKeyEnv is the variable the stored API key stands in for.
const APIKeyEnv = "OPENAI_API_KEY"

// File is the content of auth.json; unknown fields are kept on rewrite.
type File struct {
	Mode   string  `json:"auth_mode"`
	APIKey *string `json:"OPENAI_API_KEY"`
}

// Store reads and writes one CODEX_HOME's auth.json.
type Store struct {
	path string
	mu   sync.Mutex
}

// NewStore returns the store of codexHome.
func NewStore(codexHome string) *Store { return &Store{path: filepath.Join(codexHome, FileName)} }

// Path is the auth.json path.
func (s *Store) Path() string { return s.path }

// Load returns the stored credentials, nil when there are none.
func (s *Store) Load() (*File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// SaveAPIKey stores an API-key login (auth_mode "apikey"), replacing any other login.
func (s *Store) SaveAPIKey(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := json.MarshalIndent(File{Mode: ModeAPIKey, APIKey: &key}, "", "  ")
	if err != nil {
		return err
	}
	return configedit.WriteAtomic(s.path, data, 0o600)
}

// Remove deletes the stored credentials; it reports whether there were any.
func (s *Store) Remove() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// APIKey returns the stored API key, "" when there is none.
func (s *Store) APIKey() string {
	f, err := s.Load()
	if err != nil || f == nil || f.Mode != ModeAPIKey || f.APIKey == nil {
		return ""
	}
	return strings.TrimSpace(*f.APIKey)
}

// Getenv wraps getenv (nil: os.Getenv) so that an unset OPENAI_API_KEY falls back to the stored key.
func (s *Store) Getenv(getenv func(string) string) func(string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	return func(name string) string {
		v := getenv(name)
		if name == APIKeyEnv && strings.TrimSpace(v) == "" {
			return s.APIKey()
		}
		return v
	}
}
