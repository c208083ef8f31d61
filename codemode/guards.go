package codemode

import (
	"sync"

	"github.com/dop251/goja"
)

// guardSource wraps the builtins that build a large value in one Go loop, out of reach of the engine's
// interrupt and so of the memory watcher: each first checks the size it is asked for. Past V8's string
// limit a string builder throws V8's RangeError; past the memory cap (admit) the cell stops as a runaway.
// The wrappers keep their builtin's name and length.
const guardSource = `(function (admit) {
  "use strict";
  const MAX_STRING = 536870888; // V8's String::kMaxLength
  const apply = Reflect.apply, construct = Reflect.construct;
  const invalid = () => new RangeError("Invalid string length");
  const num = (v, d) => { v = Number(v); return Number.isNaN(v) ? d : Math.trunc(v); };
  const bound = (v, len, d) => { v = v === undefined ? d : num(v, 0); return v < 0 ? Math.max(len + v, 0) : Math.min(v, len); };
  const lengthOf = (o) => { const n = o == null ? 0 : num(o.length, 0); return n > 0 ? Math.min(n, 2 ** 53 - 1) : 0; };
  const wrap = (obj, name, check) => {
    const orig = obj[name];
    const f = { [name](...args) { check(this, args); return apply(orig, this, args); } }[name];
    Object.defineProperty(f, "length", { value: orig.length });
    Object.defineProperty(obj, name, { value: f, writable: true, configurable: true, enumerable: false });
  };
  const grow = (s, n) => {
    if (s == null || n <= 0) return;
    if (n > MAX_STRING) throw invalid();
    admit(n * 2);
  };
  wrap(String.prototype, "repeat", (s, [c]) => { if (s != null) { c = num(c, 0); if (c > 0 && c !== Infinity) grow(s, String(s).length * c); } });
  wrap(String.prototype, "padStart", (s, [n]) => grow(s, num(n, 0)));
  wrap(String.prototype, "padEnd", (s, [n]) => grow(s, num(n, 0)));
  wrap(String.prototype, "split", (s, [sep]) => { if (s != null && sep === "") admit(String(s).length * 32); });
  wrap(Array.prototype, "join", (a, [sep]) => {
    const n = lengthOf(a), w = sep === undefined ? 1 : String(sep).length;
    if (n > 1 && (n - 1) * w > MAX_STRING) throw invalid();
  });
  wrap(Array.prototype, "fill", (a, [, start, end]) => {
    const n = lengthOf(a);
    admit((bound(end, n, n) - bound(start, n, 0)) * 16);
  });
  wrap(Array, "from", (_, [items]) => { if (items != null && items[Symbol.iterator] === undefined) admit(lengthOf(items) * 16); });
  wrap(Function.prototype, "apply", (_, [, args]) => admit(lengthOf(args) * 16));
  wrap(Reflect, "apply", (_, [, , args]) => admit(lengthOf(args) * 16));
  wrap(Reflect, "construct", (_, [, args]) => admit(lengthOf(args) * 16));
  for (const name of ["ArrayBuffer", "SharedArrayBuffer", "Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array",
    "Uint16Array", "Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"]) {
    const C = globalThis[name];
    if (typeof C !== "function") continue;
    const size = C.BYTES_PER_ELEMENT || 1;
    // A constructor of the same name building the builtin's objects (a Proxy breaks goja's instanceof).
    const guarded = { [name]: function (...args) {
      if (new.target === undefined) return apply(C, this, args); // throws the builtin's TypeError
      if (typeof args[0] === "number") admit(args[0] * size);
      else if (args[0] != null && typeof args[0] === "object" && !(args[0] instanceof ArrayBuffer)) admit(lengthOf(args[0]) * size);
      return construct(C, args, new.target === guarded ? C : new.target);
    } }[name];
    Object.defineProperty(guarded, "length", { value: C.length });
    Object.defineProperty(guarded, "prototype", { value: C.prototype });
    Object.setPrototypeOf(guarded, C);
    Object.defineProperty(C.prototype, "constructor", { value: guarded, writable: true, configurable: true, enumerable: false });
    Object.defineProperty(globalThis, name, { value: guarded, writable: true, configurable: true, enumerable: false });
  }
})`

var guardProgram = sync.OnceValue(func() *goja.Program { return goja.MustCompile("guards.js", guardSource, true) })

// installGuards wraps the bulk builtins of the cell's runtime (on the loop goroutine).
func (c *cell) installGuards() {
	v, err := c.vm.RunProgram(guardProgram())
	if err != nil {
		panic(err)
	}
	fn, _ := goja.AssertFunction(v)
	admit := func(n float64) {
		if !watcher.admit(c, n) {
			// The interrupt set by outOfMemory stops the script before the builtin runs; this throw
			// covers a caller that catches.
			panic(c.vm.NewGoError(errMemory))
		}
	}
	if _, err := fn(goja.Undefined(), c.vm.ToValue(admit)); err != nil {
		panic(err)
	}
}
