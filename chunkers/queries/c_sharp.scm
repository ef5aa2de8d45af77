; C# (.cs): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(class_declaration name: (identifier) @name body: (declaration_list) @body) @definition.class
(struct_declaration name: (identifier) @name body: (declaration_list) @body) @definition.struct
(interface_declaration name: (identifier) @name body: (declaration_list) @body) @definition.interface
(record_declaration name: (identifier) @name body: (declaration_list)? @body) @definition.class
(enum_declaration name: (identifier) @name body: (enum_member_declaration_list) @body) @definition.enum
(namespace_declaration name: [(identifier) (qualified_name)] @name body: (declaration_list) @body) @definition.module
(file_scoped_namespace_declaration name: [(identifier) (qualified_name)] @package.name) @package
(method_declaration name: (identifier) @name body: (_)? @body) @definition.method
(constructor_declaration name: (identifier) @name body: (_)? @body) @definition.method
(destructor_declaration name: (identifier) @name body: (_)? @body) @definition.method
(operator_declaration body: (_)? @body) @definition.method
(local_function_statement name: (identifier) @name body: (_)? @body) @definition.function
(property_declaration name: (identifier) @name) @definition.constant
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.constant
(event_field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.constant
(enum_member_declaration_list (enum_member_declaration name: (identifier) @name) @definition.constant)
(delegate_declaration name: (identifier) @name) @definition.type

; ---- imports
(using_directive !name [(identifier) @import.name (qualified_name qualifier: (_) @import.source name: (identifier) @import.name)]) @import
(using_directive name: (identifier) @import.alias [(identifier) @import.name (qualified_name qualifier: (_) @import.source name: (identifier) @import.name)]) @import

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(invocation_expression function: (identifier) @reference.call)
(invocation_expression function: (member_access_expression expression: (identifier) @qualifier name: (identifier) @reference.call))
(invocation_expression function: (member_access_expression name: (identifier) @reference.call))
(object_creation_expression type: (identifier) @reference.call)
(object_creation_expression type: (generic_name (identifier) @reference.call))
(base_list (identifier) @reference.base)
(base_list (generic_name (identifier) @reference.base))
(attribute name: (identifier) @reference.call)
(member_access_expression expression: (identifier) @qualifier name: (identifier) @reference.name)
(identifier) @reference.name
