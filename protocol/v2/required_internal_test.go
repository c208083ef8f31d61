package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRequiredFieldsSorted(t *testing.T) {
	require.NotEmpty(t, requiredFields)
	for i := 1; i < len(requiredFields); i++ {
		require.Less(t, requiredFields[i-1].typeName, requiredFields[i].typeName, "requiredFields must be sorted and unique")
	}
	require.Equal(t, []string{"planType"}, requiredOf("AccountChatgpt"))
	require.Nil(t, requiredOf("NoSuchType"))
	last := requiredFields[len(requiredFields)-1]
	require.Equal(t, last.fields, requiredOf(last.typeName))
}
