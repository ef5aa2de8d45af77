; Go: what nav chunks and links (the capture names are the contract, see chunkers/queries/README.md).

; ---- definitions
(function_declaration name: (identifier) @name body: (block)? @body) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [
    (type_identifier) @receiver
    (pointer_type (type_identifier) @receiver)
    (generic_type type: (type_identifier) @receiver)
    (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name
  body: (block)? @body) @definition.method
(type_declaration (type_spec name: (type_identifier) @name type: (struct_type (field_declaration_list) @body))) @definition.struct
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type) @body)) @definition.interface
(type_declaration (type_spec name: (type_identifier) @name)) @definition.type
(type_declaration (type_alias name: (type_identifier) @name)) @definition.type
(source_file (const_declaration (const_spec name: (identifier) @name)) @definition.constant)
(source_file (var_declaration (var_spec name: (identifier) @name)) @definition.variable)
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name))) @definition.variable)
(interface_type (method_elem name: (field_identifier) @name) @definition.method)

; ---- the file's header and imports
(package_clause (package_identifier) @package.name) @package
(import_declaration) @import
(import_spec name: (package_identifier)? @import.alias path: (interpreted_string_literal) @import.source)

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (selector_expression operand: (identifier) @qualifier field: (field_identifier) @reference.call))
(call_expression function: (selector_expression field: (field_identifier) @reference.call))
(composite_literal type: (type_identifier) @reference.call)
(composite_literal type: (qualified_type package: (package_identifier) @qualifier name: (type_identifier) @reference.call))
(qualified_type package: (package_identifier) @qualifier name: (type_identifier) @reference.type)
(type_identifier) @reference.type
(struct_type (field_declaration_list (field_declaration . type: [(type_identifier) (qualified_type)] @reference.base .)))
(selector_expression operand: (identifier) @qualifier field: (field_identifier) @reference.name)
(identifier) @reference.name
