// Package thread holds threads and turns: the Manager of loaded threads, each Thread's settings,
// history, subscribers, out-of-band elicitation counter and stopwatch controller, and the turn loop that
// streams the model, emits items and runs tool calls until the model answers without one.
//
// Everything a client can observe leaves a thread through Thread.emit, under one lock per thread, so
// the order of notifications is decided in one place.
package thread
