package protocol

// enumAliases are the values a string enum also accepts, as the reference's serde aliases, with the value
// each stands for (seen on codex-cli 0.169.0: thread/settings/update with mode "code" reports "default").
var enumAliases = map[string]map[string]string{
	"ModeKind": {"code": "default", "custom": "default", "execute": "default", "pair_programming": "default"},
}

// enumWording is the reference's list of expected values in an unknown-variant error, for the enums whose
// aliases it names too.
var enumWording = map[string][]string{
	"ModeKind": {"plan", "code", "custom", "default", "execute", "pair_programming"},
}
