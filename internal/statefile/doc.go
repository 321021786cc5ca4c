// Package statefile reads Terraform state files in format version 4, the
// format every Terraform and OpenTofu release since 0.12 writes.
//
// Two entry points serve two needs:
//
//   - ReadSummary streams a state and returns its serial, lineage, Terraform
//     version and output metadata (name, type, sensitivity). It never keeps
//     output values or resources: memory use is bounded by a small read buffer
//     and the size of the metadata, whatever the size of the state. Probes use
//     it on response bodies straight from the network.
//   - Parse decodes a state held in memory, including the raw JSON of every
//     output value, for features that need the values.
//
// Both reject malformed JSON and any format version other than 4, and both
// validate every output type (see Kind).
package statefile
