package applypatch

import "encoding/json"

// ToolName is the name of the freeform patch tool offered to the model.
const ToolName = "apply_patch"

const toolDescription = "Edit files by sending a patch as raw text (freeform input, not JSON). " +
	"The patch starts with `*** Begin Patch` and ends with `*** End Patch`. In between, each file operation begins with " +
	"`*** Add File: <path>` (followed by the new file's lines, each prefixed with `+`), " +
	"`*** Delete File: <path>`, or `*** Update File: <path>` (optionally followed by `*** Move to: <new path>`) " +
	"and then one or more change blocks. A change block starts with `@@` (optionally `@@ <line that precedes the change, e.g. a function signature>`) " +
	"and lists lines prefixed with ` ` (unchanged context), `-` (removed) or `+` (added); give about three lines of context " +
	"around each change, and end a block with `*** End of File` when it must match at the end of the file. Use paths relative to the working directory."

// toolGrammar describes the patch language in Lark syntax for constrained decoding.
const toolGrammar = `start: "*** Begin Patch" NL operation+ "*** End Patch" NL?

operation: add_file | delete_file | update_file

add_file: "*** Add File: " LINE NL added_line*
delete_file: "*** Delete File: " LINE NL
update_file: "*** Update File: " LINE NL move_to? first_block block*

move_to: "*** Move to: " LINE NL
first_block: block_header? change_line+ end_of_file?
block: block_header change_line+ end_of_file?
block_header: "@@" NL | "@@ " LINE NL
change_line: (" " | "-" | "+") LINE? NL
added_line: "+" LINE? NL
end_of_file: "*** End of File" NL

LINE: /[^\r\n]+/
NL: "\n"
`

// ToolSpec returns the Responses API tool definition of apply_patch, a custom
// (freeform) tool whose input is constrained by a Lark grammar.
func ToolSpec() json.RawMessage {
	spec := map[string]any{
		"type":        "custom",
		"name":        ToolName,
		"description": toolDescription,
		"format": map[string]any{
			"type":       "grammar",
			"syntax":     "lark",
			"definition": toolGrammar,
		},
	}
	out, err := json.Marshal(spec)
	if err != nil {
		panic("applypatch: tool spec: " + err.Error()) // static data; cannot fail
	}
	return out
}
