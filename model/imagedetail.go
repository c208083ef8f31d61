package model

import (
	"bytes"
	"encoding/json"
)

// ImageDetailLowNote replaces an input image asked with detail "low" on a model that cannot take it.
const ImageDetailLowNote = "image content omitted because detail 'low' is not supported; use 'high', 'original', or 'auto'"

// RecordedImageDetail is the detail an input image (user input or view_image output) is recorded with for
// this model, given the client's ("" = none): "original" on a catalogue model, else the client's, "high" when
// unset; omit reports an image the reference replaces by ImageDetailLowNote (detail "low" outside the catalogue).
func RecordedImageDetail(id, requested string) (detail string, omit bool) {
	if m := find(id); m != nil && m.ImageDetailOriginal {
		return "original", false
	}
	switch requested {
	case "":
		return "high", false
	case "low":
		return "", true
	}
	return requested, false
}

var (
	inputImageMarker     = []byte(`"input_image"`)
	detailOriginalMarker = []byte(`"detail":"original"`)
	detailMarker         = []byte(`"detail":`)
)

// RequestImageDetails adapts the input_image parts of the request's input items to the model, as the reference
// does when it sends its history: a Responses-lite model gets them without `detail`, a model without
// "original" support gets "high" for it. Items without an image to change are returned as they are; the slice
// is a copy only when something changed.
func RequestImageDetails(id string, items []json.RawMessage) []json.RawMessage {
	m := find(id)
	lite := m != nil && m.ResponsesLite
	if !lite && m != nil && m.ImageDetailOriginal {
		return items
	}
	var out []json.RawMessage
	for i, it := range items {
		if !bytes.Contains(it, inputImageMarker) || (!lite && !bytes.Contains(it, detailOriginalMarker)) ||
			(lite && !bytes.Contains(it, detailMarker)) {
			continue
		}
		changed, ok := adaptImages(it, lite)
		if !ok {
			continue
		}
		if out == nil {
			out = append(make([]json.RawMessage, 0, len(items)), items...)
		}
		out[i] = changed
	}
	if out == nil {
		return items
	}
	return out
}

// adaptImages rewrites the input_image parts of one message (content) or tool output (output) item.
func adaptImages(item json.RawMessage, lite bool) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(item, &m) != nil {
		return nil, false
	}
	changed := false
	for _, key := range []string{"content", "output"} {
		raw, ok := m[key]
		if !ok || len(raw) == 0 || raw[0] != '[' {
			continue
		}
		var parts []map[string]json.RawMessage
		if json.Unmarshal(raw, &parts) != nil {
			continue
		}
		partChanged := false
		for _, p := range parts {
			if string(p["type"]) != `"input_image"` {
				continue
			}
			d, has := p["detail"]
			switch {
			case lite && has:
				delete(p, "detail")
			case !lite && string(d) == `"original"`:
				p["detail"] = json.RawMessage(`"high"`)
			default:
				continue
			}
			partChanged = true
		}
		if partChanged {
			m[key] = marshalNoEscape(parts)
			changed = true
		}
	}
	if !changed {
		return nil, false
	}
	return marshalNoEscape(m), true
}

// marshalNoEscape encodes v as JSON without HTML escaping (as the rest of the request is written).
func marshalNoEscape(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(buf.Bytes(), "\n")
}
