; Java (.java): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(class_declaration name: (identifier) @name body: (class_body) @body) @definition.class
(record_declaration name: (identifier) @name body: (class_body) @body) @definition.class
(interface_declaration name: (identifier) @name body: (interface_body) @body) @definition.interface
(annotation_type_declaration name: (identifier) @name body: (annotation_type_body) @body) @definition.interface
(enum_declaration name: (identifier) @name body: (enum_body) @body) @definition.enum
(method_declaration name: (identifier) @name body: (block)? @body) @definition.method
(constructor_declaration name: (identifier) @name body: (constructor_body) @body) @definition.method
(compact_constructor_declaration name: (identifier) @name body: (block) @body) @definition.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.constant
(enum_body (enum_constant name: (identifier) @name) @definition.constant)
(annotation_type_element_declaration name: (identifier) @name) @definition.method

; ---- the file's header and imports
(package_declaration [(scoped_identifier) (identifier)] @package.name) @package
(import_declaration [(scoped_identifier scope: (_) @import.source name: (identifier) @import.name) (identifier) @import.name]) @import
(import_declaration (scoped_identifier) @import.source (asterisk)) @import

; ---- comments travel with the definition below them (annotations are part of the declaration)
(line_comment) @attach
(block_comment) @attach

; ---- references
(method_invocation object: (identifier) @qualifier name: (identifier) @reference.call)
(method_invocation name: (identifier) @reference.call)
(object_creation_expression type: (type_identifier) @reference.call)
(object_creation_expression type: (generic_type (type_identifier) @reference.call))
(superclass (type_identifier) @reference.base)
(superclass (generic_type (type_identifier) @reference.base))
(super_interfaces (type_list (type_identifier) @reference.base))
(super_interfaces (type_list (generic_type (type_identifier) @reference.base)))
(extends_interfaces (type_list (type_identifier) @reference.base))
(marker_annotation name: (identifier) @reference.call)
(annotation name: (identifier) @reference.call)
(scoped_type_identifier (type_identifier) @qualifier (type_identifier) @reference.type)
(type_identifier) @reference.type
(field_access object: (identifier) @qualifier field: (identifier) @reference.name)
(identifier) @reference.name
