package sqlcore

import "github.com/batonhq/baton/internal/jsonfast"

// The metadata objects the store's callers give it (continuation
// placeholders', job runs': strings in one or two levels of objects) and
// usages are written without encoding/json's reflection, byte for byte
// what json.Marshal writes (jsonfast), or, for a value appendObject does
// not know, by json.Marshal. FuzzAppendMetadata and FuzzAppendUsage hold
// them to json.Marshal.
var (
	// appendObject is jsonfast.AppendObject.
	appendObject = jsonfast.AppendObject
	// appendUsage is jsonfast.AppendUsage.
	appendUsage = jsonfast.AppendUsage
)
