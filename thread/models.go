package thread

import "appserver/model"

// ModelClient returns the shared Responses client of a configured provider.
func (m *Manager) ModelClient(providerID string) (*model.Client, error) {
	return m.modelClient(m.Config(), providerID)
}
