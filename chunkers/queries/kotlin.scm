; Kotlin (.kt .kts): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(class_declaration name: (identifier) @name (class_body)? @body) @definition.class
(class_declaration name: (identifier) @name (enum_class_body)? @body) @definition.class
(object_declaration name: (identifier) @name (class_body)? @body) @definition.class
(companion_object (class_body) @body) @definition.class
(function_declaration name: (identifier) @name (function_body)? @body) @definition.function
(type_alias (identifier) @name) @definition.type
(source_file (property_declaration (variable_declaration (identifier) @name)) @definition.constant)
(class_body (property_declaration (variable_declaration (identifier) @name)) @definition.constant)
(enum_class_body (enum_entry (identifier) @name) @definition.constant)

; ---- the file's header and imports
(package_header (qualified_identifier) @package.name) @package
(import (qualified_identifier) @import.source) @import

; ---- comments travel with the definition below them
(line_comment) @attach
(block_comment) @attach

; ---- references
(call_expression (identifier) @reference.call)
(call_expression (navigation_expression (identifier) @qualifier (identifier) @reference.call))
(delegation_specifier (user_type (identifier) @reference.base))
(delegation_specifier (constructor_invocation (user_type (identifier) @reference.base)))
(user_type (identifier) @reference.type)
(identifier) @reference.name
