; Swift (.swift): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(class_declaration name: (type_identifier) @name body: (_) @body) @definition.class
(class_declaration name: (user_type (type_identifier) @name) body: (_) @body) @definition.class
(protocol_declaration name: (type_identifier) @name body: (protocol_body) @body) @definition.interface
(function_declaration name: (simple_identifier) @name body: (function_body) @body) @definition.function
(init_declaration body: (function_body) @body) @definition.method
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(typealias_declaration name: (type_identifier) @name) @definition.type
(source_file (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.constant)
(class_body (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.constant)
(enum_class_body (enum_entry name: (simple_identifier) @name) @definition.constant)

; ---- imports
(import_declaration (identifier) @import.source) @import

; ---- comments travel with the definition below them
(comment) @attach
(multiline_comment) @attach

; ---- references
(call_expression (simple_identifier) @reference.call)
(call_expression (navigation_expression target: (simple_identifier) @qualifier suffix: (navigation_suffix suffix: (simple_identifier) @reference.call)))
(call_expression (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @reference.call)))
(inheritance_specifier inherits_from: (user_type (type_identifier) @reference.base))
(user_type (type_identifier) @reference.type)
(simple_identifier) @reference.name
