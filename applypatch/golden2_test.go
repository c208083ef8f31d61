package applypatch

// Golden values from a second reference session (edge cases); "ROOT" stands for the scratch directory.

var refSession2Files = map[string]string{
	"nonl.txt":   "p\nq",
	"nonl2.txt":  "p\nq",
	"ctx.py":     "def a():\n    return 1\n\ndef b():\n    return 1\n",
	"eof.txt":    "z\ny\nz\n",
	"ws2.txt":    "foo   \n",
	"uni.txt":    "a \u2013 b \u201cq\u201d\n",
	"fileparent": "f",
	"multi.txt":  "a\nb\na\n",
}

var refSession2 = []struct{ patch, changes, output string }{
	{"*** Begin Patch\n*** End Patch", "", "patch rejected: empty patch"},
	{"*** Add File: x.txt\n+a\n*** End Patch", "", "apply_patch verification failed: invalid patch: The first line of the patch must be '*** Begin Patch'"},
	{"*** Begin Patch\n*** Add File: x.txt\n+a", "", "apply_patch verification failed: invalid patch: The last line of the patch must be '*** End Patch'"},
	{"<<EOF\n*** Begin Patch\n*** Add File: heredoc2.txt\n+h\n*** End Patch\nEOF", `[{"path": "ROOT/heredoc2.txt", "kind": {"type": "add"}, "diff": "h\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA heredoc2.txt\n"},
	{"  \n *** Begin Patch \n*** Add File: ws.txt\n+w\n *** End Patch  \n\n", `[{"path": "ROOT/ws.txt", "kind": {"type": "add"}, "diff": "w\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA ws.txt\n"},
	{"*** Begin Patch\n*** Update File: nonl.txt\n@@\n p\n-q\n+Q\n*** End Patch", `[{"path": "ROOT/nonl.txt", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1,2 +1,2 @@\n p\n-q\n\\ No newline at end of file\n+Q\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM nonl.txt\n"},
	{"*** Begin Patch\n*** Update File: nonl2.txt\n+appended\n*** End Patch", `[{"path": "ROOT/nonl2.txt", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1,2 +1,3 @@\n p\n-q\n\\ No newline at end of file\n+q\n+appended\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM nonl2.txt\n"},
	{"*** Begin Patch\n*** Update File: ctx.py\n@@ def b():\n-    return 1\n+    return 2\n*** End Patch", `[{"path": "ROOT/ctx.py", "kind": {"type": "update", "move_path": null}, "diff": "@@ -4,2 +4,2 @@\n def b():\n-    return 1\n+    return 2\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM ctx.py\n"},
	{"*** Begin Patch\n*** Update File: ctx.py\n@@ def zzz():\n-    return 1\n+    return 2\n*** End Patch", "", "apply_patch verification failed: Failed to find context 'def zzz():' in ROOT/ctx.py"},
	{"*** Begin Patch\n*** Update File: eof.txt\n@@\n-z\n+Z\n*** End of File\n*** End Patch", `[{"path": "ROOT/eof.txt", "kind": {"type": "update", "move_path": null}, "diff": "@@ -2,2 +2,2 @@\n y\n-z\n+Z\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM eof.txt\n"},
	{"*** Begin Patch\n*** Update File: ws2.txt\n@@\n-foo\n+bar\n*** End Patch", `[{"path": "ROOT/ws2.txt", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1 +1 @@\n-foo   \n+bar\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM ws2.txt\n"},
	{"*** Begin Patch\n*** Update File: uni.txt\n@@\n-a - b \"q\"\n+fixed\n*** End Patch", `[{"path": "ROOT/uni.txt", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1 +1 @@\n-a \u2013 b \u201cq\u201d\n+fixed\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM uni.txt\n"},
	{"*** Begin Patch\n*** Delete File: nosuch.txt\n*** End Patch", "", "apply_patch verification failed: Failed to read ROOT/nosuch.txt: No such file or directory (os error 2)"},
	{"*** Begin Patch\n*** Update File: ctx.py\n*** End Patch", "", "apply_patch verification failed: invalid hunk at line 2, Update file hunk for path 'ctx.py' is empty"},
	{"*** Begin Patch\n*** Update File: ctx.py\nbogus line\n*** End Patch", "", "apply_patch verification failed: invalid hunk at line 3, Unexpected line found in update hunk: 'bogus line'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"},
	{"*** Begin Patch\n*** Add File: ok1.txt\n+ok\n*** Update File: ctx.py\n@@\n-nomatch\n+x\n*** End Patch", "", "apply_patch verification failed: Failed to find expected lines in ROOT/ctx.py:\nnomatch"},
	{"*** Begin Patch\n*** Add File: empty.txt\n*** End Patch", `[{"path": "ROOT/empty.txt", "kind": {"type": "add"}, "diff": ""}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA empty.txt\n"},
	{"*** Begin Patch\n*** Update File: ctx.py\n@@\n-    return 1\n+    return 9\n*** End Patch", `[{"path": "ROOT/ctx.py", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1,3 +1,3 @@\n def a():\n-    return 1\n+    return 9\n \n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM ctx.py\n"},
	{"*** Begin Patch\n*** Update File: ctx.py\n@@\n def a():\n-    return 1\n+    return 7\nstray\n*** End Patch", "", "apply_patch verification failed: invalid hunk at line 7, Expected update hunk to start with a @@ context marker, got: 'stray'"},
	{"", "", "apply_patch verification failed: invalid patch: The last line of the patch must be '*** End Patch'"},
	{"*** Begin Patch\n*** Update File: multi.txt\n@@\n-a\n+A\n@@\n-a\n+B\n*** End Patch", `[{"path": "ROOT/multi.txt", "kind": {"type": "update", "move_path": null}, "diff": "@@ -1,3 +1,3 @@\n-a\n+A\n b\n-a\n+B\n"}]`, "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM multi.txt\n"},
}
