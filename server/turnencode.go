package server

import (
	"encoding/json"
	"strconv"

	protocol "appserver/protocol/v2"
)

// appendTurn appends the JSON of t, byte for byte what json.Marshal(t) gives, without encoding/json's
// reflection and the re-validation of every item's bytes at the turn level. The fields of the turn and of
// the two common item types (user and agent messages) are written directly; anything else (errors, other
// item types, non-text user input) goes through its own MarshalJSON, whose output is already compact and
// HTML-escaped as json.Marshal would embed it.
func appendTurn(out []byte, t *protocol.Turn) ([]byte, error) {
	out = append(out, `{"completedAt":`...)
	out = appendOptInt(out, t.CompletedAt)
	out = append(out, `,"durationMs":`...)
	out = appendOptInt(out, t.DurationMs)
	out = append(out, `,"error":`...)
	var err error
	if t.Error == nil {
		out = append(out, "null"...)
	} else if out, err = appendMarshal(out, t.Error); err != nil {
		return nil, err
	}
	out = append(out, `,"id":`...)
	out = protocol.AppendString(out, t.ID)
	out = append(out, `,"items":[`...)
	if out, err = appendEach(out, t.Items, appendItem); err != nil {
		return nil, err
	}
	out = append(out, ']')
	if t.ItemsView != nil {
		out = append(out, `,"itemsView":`...)
		out = protocol.AppendString(out, string(*t.ItemsView))
	}
	out = append(out, `,"rootTurnId":`...)
	out = appendOptString(out, t.RootTurnID)
	out = append(out, `,"startedAt":`...)
	out = appendOptInt(out, t.StartedAt)
	out = append(out, `,"status":`...)
	out = protocol.AppendString(out, string(t.Status))
	return append(out, '}'), nil
}

// appendItem appends one thread item as ThreadItem.MarshalJSON would.
func appendItem(out []byte, it *protocol.ThreadItem) ([]byte, error) {
	var err error
	switch v := it.Value.(type) {
	case protocol.ThreadItemUserMessage:
		out = append(out, `{"type":"userMessage","clientId":`...)
		out = appendOptString(out, v.ClientID)
		out = append(out, `,"completedAtMs":`...)
		out = appendOptInt(out, v.CompletedAtMs)
		out = append(out, `,"content":[`...)
		if out, err = appendEach(out, v.Content, appendUserInput); err != nil {
			return nil, err
		}
		out = append(out, `],"id":`...)
		out = protocol.AppendString(out, v.ID)
		out = append(out, `,"startedAtMs":`...)
		out = appendOptInt(out, v.StartedAtMs)
		return append(out, '}'), nil
	case protocol.ThreadItemAgentMessage:
		out = append(out, `{"type":"agentMessage","completedAtMs":`...)
		out = appendOptInt(out, v.CompletedAtMs)
		out = append(out, `,"delivery":`...)
		out = appendOptString(out, v.Delivery)
		out = append(out, `,"id":`...)
		out = protocol.AppendString(out, v.ID)
		out = append(out, `,"memoryCitation":`...)
		if out, err = appendMarshalOrNull(out, v.MemoryCitation == nil, v.MemoryCitation); err != nil {
			return nil, err
		}
		out = append(out, `,"moderation":`...)
		if out, err = appendMarshalOrNull(out, v.Moderation == nil, v.Moderation); err != nil {
			return nil, err
		}
		out = append(out, `,"phase":`...)
		out = appendOptString(out, v.Phase)
		out = append(out, `,"questions":`...)
		if out, err = appendMarshalOrNull(out, v.Questions == nil, v.Questions); err != nil {
			return nil, err
		}
		out = append(out, `,"startedAtMs":`...)
		out = appendOptInt(out, v.StartedAtMs)
		out = append(out, `,"text":`...)
		out = protocol.AppendString(out, v.Text)
		return append(out, '}'), nil
	}
	b, err := it.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}

// appendUserInput appends one user input as UserInput.MarshalJSON would.
func appendUserInput(out []byte, in *protocol.UserInput) ([]byte, error) {
	if v, ok := in.Value.(protocol.UserInputText); ok {
		out = append(out, `{"type":"text","text":`...)
		out = protocol.AppendString(out, v.Text)
		if v.TextElements != nil {
			out = append(out, `,"text_elements":`...)
			if len(v.TextElements) == 0 {
				out = append(out, "[]"...)
			} else {
				var err error
				if out, err = appendMarshal(out, v.TextElements); err != nil {
					return nil, err
				}
			}
		}
		return append(out, '}'), nil
	}
	b, err := in.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}

func appendOptInt(out []byte, p *int64) []byte {
	if p == nil {
		return append(out, "null"...)
	}
	return strconv.AppendInt(out, *p, 10)
}

// appendOptString appends *p as a JSON string, or null when p is nil.
func appendOptString[S ~string](out []byte, p *S) []byte {
	if p == nil {
		return append(out, "null"...)
	}
	return protocol.AppendString(out, string(*p))
}

// appendEach appends the elements of xs, comma-separated, each written by appendOne.
func appendEach[T any](out []byte, xs []T, appendOne func([]byte, *T) ([]byte, error)) ([]byte, error) {
	var err error
	for i := range xs {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = appendOne(out, &xs[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func appendMarshalOrNull(out []byte, isNil bool, v any) ([]byte, error) {
	if isNil {
		return append(out, "null"...), nil
	}
	return appendMarshal(out, v)
}

func appendMarshal(out []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(out, b...), nil
}
