// Package yamlpath builds the YAML paths ($.cases[1].turns) by which the
// network and eval-set loaders point a problem at its line.
package yamlpath

import "strings"

// Parent strips the last element of a path: $.a[1].b → $.a[1] → $.a → $;
// the root's parent is "".
func Parent(p string) string {
	if p == "$" {
		return ""
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return "$"
	}
	return p[:i]
}
