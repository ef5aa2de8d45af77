; Rust (.rs): what nav chunks and links (contract: chunkers/queries/README.md). Qualified names use `::`.

; ---- definitions
(function_item name: (identifier) @name body: (block) @body) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name body: (_)? @body) @definition.struct
(union_item name: (type_identifier) @name body: (_)? @body) @definition.struct
(enum_item name: (type_identifier) @name body: (enum_variant_list) @body) @definition.enum
(trait_item name: (type_identifier) @name body: (declaration_list) @body) @definition.trait
(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name)
                  (scoped_type_identifier name: (type_identifier) @name)
                  (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
                  (reference_type type: (type_identifier) @name)]
           body: (declaration_list) @body) @definition.impl
(impl_item type: (_) @name body: (declaration_list) @body) @definition.impl
(mod_item name: (identifier) @name body: (declaration_list) @body) @definition.module
(type_item name: (type_identifier) @name) @definition.type
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.constant
(macro_definition name: (identifier) @name) @definition.macro
(enum_variant_list (enum_variant name: (identifier) @name) @definition.constant)

; ---- the file's header and imports
(use_declaration) @import
(extern_crate_declaration name: (identifier) @import.name) @import
(mod_item name: (identifier) @import.name !body) @import
(use_declaration argument: (identifier) @import.name)
(use_declaration argument: (scoped_identifier path: (_) @import.source name: (identifier) @import.name))
(use_as_clause path: (scoped_identifier path: (_) @import.source name: (identifier) @import.name) alias: (identifier) @import.alias)
(use_as_clause path: (identifier) @import.name alias: (identifier) @import.alias)
(scoped_use_list path: (_) @import.source list: (use_list [(identifier) (self)] @import.name))
(scoped_use_list path: (_) @import.source list: (use_list (scoped_identifier path: (_) @import.prefix name: (identifier) @import.name)))
(scoped_use_list path: (_) @import.source list: (use_list (use_as_clause path: (identifier) @import.name alias: (identifier) @import.alias)))
(use_wildcard (scoped_identifier) @import.source)
(use_wildcard (identifier) @import.source)

; ---- comments and attributes travel with the item below them
(line_comment) @attach
(block_comment) @attach
(attribute_item) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (scoped_identifier path: (_) @qualifier name: (identifier) @reference.call))
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(call_expression function: (generic_function function: (identifier) @reference.call))
(call_expression function: (generic_function function: (scoped_identifier path: (_) @qualifier name: (identifier) @reference.call)))
(macro_invocation macro: (identifier) @reference.call)
(struct_expression name: (type_identifier) @reference.call)
(impl_item trait: (type_identifier) @reference.base)
(impl_item trait: (scoped_type_identifier name: (type_identifier) @reference.base))
(impl_item trait: (generic_type type: (type_identifier) @reference.base))
(trait_bounds (type_identifier) @reference.base)
(scoped_type_identifier path: (_) @qualifier name: (type_identifier) @reference.type)
(type_identifier) @reference.type
(scoped_identifier path: (identifier) @qualifier name: (identifier) @reference.name)
(identifier) @reference.name
