; Scala (.scala .sc): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(class_definition name: (identifier) @name body: (template_body)? @body) @definition.class
(object_definition name: (identifier) @name body: (template_body)? @body) @definition.class
(trait_definition name: (identifier) @name body: (template_body)? @body) @definition.trait
(enum_definition name: (identifier) @name body: (_)? @body) @definition.enum
(function_definition name: (identifier) @name body: (_)? @body) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(type_definition name: (type_identifier) @name) @definition.type
(compilation_unit (val_definition pattern: (identifier) @name) @definition.constant)
(template_body (val_definition pattern: (identifier) @name) @definition.constant)
(template_body (var_definition pattern: (identifier) @name) @definition.constant)
(package_object name: (identifier) @name body: (template_body)? @body) @definition.module

; ---- the file's header and imports
(package_clause name: (package_identifier) @package.name) @package
(import_declaration) @import

; ---- comments travel with the definition below them
(comment) @attach
(block_comment) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression value: (identifier) @qualifier field: (identifier) @reference.call))
(call_expression function: (field_expression field: (identifier) @reference.call))
(instance_expression (type_identifier) @reference.call)
(extends_clause type: (type_identifier) @reference.base)
(extends_clause type: (generic_type type: (type_identifier) @reference.base))
(type_identifier) @reference.type
(identifier) @reference.name
