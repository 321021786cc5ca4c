// Package statefile reads Terraform state files in format version 4, the
// format every Terraform and OpenTofu release since 0.12 writes.
//
// It is the operator's only state parser. One streaming walker reads
// every document, token by token, from an io.Reader, and it has two modes:
//
//   - ReadSummary returns a state's serial, lineage, Terraform version and
//     number of outputs. It keeps no output, value or resource: its memory
//     is a small read buffer whatever the size of the state or the number
//     of its outputs.
//   - ReadOutputs also keeps the outputs a caller selects, each value as
//     compact JSON, within byte and count budgets it checks while reading:
//     outputs beyond them are refused before they are built.
//
// Every state the operator reads goes through it straight from the
// network, never whole in memory: the HttpBackend probe through
// stateclient.Client.FetchSummary (ReadSummary), the CosBackend probe
// through cos.Client.StreamState and ReadSummary, and a RemoteState through
// either client's StreamState and outputs.Read (ReadOutputs). So a state of
// millions of outputs or gigabytes of resources costs a read buffer, plus
// the outputs a RemoteState publishes within their budgets. There is
// deliberately no API that parses a state held in a byte slice, and no
// production code decodes a state with encoding/json: it only decodes
// single tokens the walker has already validated and bounded (an object
// key, an output's type).
//
// OpenTofu's encrypted state is an envelope (serial and lineage in clear
// text, key parameters, an encrypted payload). Without a Decryption it is
// summarized from its serial and lineage, its payload skipped while
// streaming. With one, the payload is the one part read whole, within
// Decryption.MaxBytes and after Decryption.Acquire (AES-GCM authenticates
// the whole ciphertext before it yields a byte), decrypted, and the plain
// state read from it as any other.
//
// Both modes reject malformed JSON, trailing data and any format version
// other than 4, and validate every output type (see Kind). Their errors
// never quote the input (a state's bytes may be secret), except the names
// of an encrypted state's key providers, which a Decrypter may name.
package statefile
