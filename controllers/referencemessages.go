package controllers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/infrastate/backend-operator/controllers/internal/conditions"
)

// The messages of a reference that cannot be used: what is wrong, and what
// to do, in one sentence that names objects and keys, never a value. The
// functions of this file are pure and table-tested.

// Bounds of the keys a message lists: a Secret may hold hundreds.
const (
	// listedKeys is the most key names a message lists.
	listedKeys = 10
	// listedKeyBytes is the longest key name a message lists whole.
	listedKeyBytes = 64
)

// notFoundMessage is the message of a reference to a Secret or ConfigMap
// that does not exist. References name objects of the backend's own
// namespace: the message says so, for the user who created the object in
// another one.
func notFoundMessage(kind, namespace, name, field string) string {
	return fmt.Sprintf("%s %s/%s referenced by %s does not exist in namespace %s: "+
		"references name objects of the backend's own namespace, so create it there or fix the name",
		kind, namespace, name, field, namespace)
}

// keyProblem is a Secret or ConfigMap that lacks keys a reference needs.
type keyProblem struct {
	// kind, namespace and name identify the object; field is the
	// reference.
	kind, namespace, name, field string
	// keyField is the spec field that names the key; "" when the keys are
	// fixed (tls.crt and tls.key, secretId and secretKey).
	keyField string
	// missing are the keys it does not have, empty those it has empty.
	missing, empty []string
	// present are the keys it has, in any order.
	present []string
}

// missingKeysMessage says which keys an object lacks, which keys it has
// (names only, at most listedKeys of them), and what to do.
func missingKeysMessage(p keyProblem) string {
	var what []string
	if len(p.missing) > 0 {
		what = append(what, fmt.Sprintf("has no %s %s", plural(len(p.missing), "key", "keys"), quotedList(p.missing)))
	}
	if len(p.empty) > 0 {
		what = append(what, fmt.Sprintf("has %s %s empty", plural(len(p.empty), "key", "keys"), quotedList(p.empty)))
	}
	fix := "add " + plural(len(p.missing)+len(p.empty), "the key", "the keys")
	if p.keyField != "" {
		fix += ", or set " + p.keyField + " to the key that holds it"
	}
	return fmt.Sprintf("%s %s/%s referenced by %s %s (%s): %s",
		p.kind, p.namespace, p.name, p.field, strings.Join(what, " and "), keyList(p.present), fix)
}

// keyList describes the keys an object has, sorted, without duplicates:
// at most listedKeys names, each clipped to listedKeyBytes.
func keyList(keys []string) string {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(keys) == 0 {
		return "it has no keys"
	}
	shown := make([]string, 0, min(len(keys), listedKeys))
	for _, k := range keys[:min(len(keys), listedKeys)] {
		if c := conditions.Clip(k, listedKeyBytes); c != k {
			k = c + "..."
		}
		shown = append(shown, k)
	}
	list := strings.Join(shown, ", ")
	if more := len(keys) - len(shown); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return plural(len(keys), "its key: ", "its keys: ") + list
}

// quotedList quotes each name and joins them with "and".
func quotedList(names []string) string {
	quoted := make([]string, 0, len(names))
	for _, n := range names {
		quoted = append(quoted, fmt.Sprintf("%q", n))
	}
	return strings.Join(quoted, " and ")
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
