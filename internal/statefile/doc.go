// Package statefile reads Terraform state files in format version 4, the
// format every Terraform and OpenTofu release since 0.12 writes.
//
// One streaming walker reads every document, token by token, and serves
// two needs:
//
//   - ReadSummary returns a state's serial, lineage, Terraform version and
//     number of outputs. It keeps no output, value or resource: its memory
//     is a small read buffer whatever the size of the state or the number
//     of its outputs. Probes use it on response bodies straight from the
//     network.
//   - ReadOutputs also keeps the outputs a caller selects, each value as
//     compact JSON, within byte and count budgets it checks while reading:
//     outputs beyond them are refused before they are built.
//
// Parse is ReadOutputs on a state held in memory, without selection or
// budget, for tests and tools that hold the whole state anyway.
//
// All reject malformed JSON, trailing data and any format version other
// than 4, and validate every output type (see Kind). Their errors never
// quote the input: a state's bytes may be secret.
package statefile
