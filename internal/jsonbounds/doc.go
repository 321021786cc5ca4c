// Package jsonbounds measures a JSON value against bounds on its shape
// (nesting depth, members per list or object, string and key lengths,
// number literals) without decoding it: it reads one token at a time and
// stops at the first breach, so a hostile value costs no more than the
// bytes read before it. The render package checks override values with it
// and the outputs package RemoteState defaults; both measure sizes the way
// the admission policy of config/admission does.
//
// Errors never quote the value: it may be secret.
package jsonbounds
