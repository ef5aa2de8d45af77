; PHP (.php): what nav chunks and links (contract: chunkers/queries/README.md). Qualified names use `::`.

; ---- definitions
(class_declaration name: (name) @name body: (declaration_list) @body) @definition.class
(interface_declaration name: (name) @name body: (declaration_list) @body) @definition.interface
(trait_declaration name: (name) @name body: (declaration_list) @body) @definition.trait
(enum_declaration name: (name) @name body: (enum_declaration_list) @body) @definition.enum
(function_definition name: (name) @name body: (compound_statement) @body) @definition.function
(method_declaration name: (name) @name body: (compound_statement)? @body) @definition.method
(const_declaration (const_element (name) @name)) @definition.constant
(property_declaration (property_element (variable_name (name) @name))) @definition.constant
(enum_declaration_list (enum_case name: (name) @name) @definition.constant)
(namespace_definition name: (namespace_name) @name body: (compound_statement) @body) @definition.module
(namespace_definition name: (namespace_name) @package.name !body) @package

; ---- imports
(namespace_use_declaration (namespace_use_clause (qualified_name prefix: (namespace_name)? @import.source (name) @import.name) alias: (name)? @import.alias)) @import
(namespace_use_declaration (namespace_use_clause . (name) @import.name alias: (name)? @import.alias)) @import
(expression_statement [(require_expression [(string (string_content) @import.source) (encapsed_string (string_content) @import.source)]) (require_once_expression [(string (string_content) @import.source) (encapsed_string (string_content) @import.source)]) (include_expression [(string (string_content) @import.source) (encapsed_string (string_content) @import.source)]) (include_once_expression [(string (string_content) @import.source) (encapsed_string (string_content) @import.source)])]) @import

; ---- comments travel with the definition below them
(comment) @attach
(attribute_list) @attach

; ---- references
(function_call_expression function: (name) @reference.call)
(function_call_expression function: (qualified_name (name) @reference.call))
(member_call_expression name: (name) @reference.call)
(scoped_call_expression scope: (name) @qualifier name: (name) @reference.call)
(object_creation_expression (name) @reference.call)
(object_creation_expression (qualified_name (name) @reference.call))
(base_clause (name) @reference.base)
(class_interface_clause (name) @reference.base)
(use_declaration (name) @reference.base)
(named_type (name) @reference.type)
(class_constant_access_expression (name) @qualifier (name) @reference.name)
(name) @reference.name
