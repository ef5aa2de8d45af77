; TypeScript and TSX (.ts .mts .cts .tsx): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(function_declaration name: (identifier) @name body: (statement_block) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (statement_block) @body) @definition.function
(function_signature name: (identifier) @name) @definition.function
(class_declaration name: (type_identifier) @name body: (class_body) @body) @definition.class
(abstract_class_declaration name: (type_identifier) @name body: (class_body) @body) @definition.class
(interface_declaration name: (type_identifier) @name body: (interface_body) @body) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name body: (enum_body) @body) @definition.enum
(internal_module name: [(identifier) (nested_identifier)] @name body: (statement_block) @body) @definition.module
(module name: [(string) (identifier) (nested_identifier)] @name body: (statement_block) @body) @definition.module
(class_body (method_definition name: [(property_identifier) (private_property_identifier)] @name body: (statement_block) @body) @definition.method)
(class_body (method_signature name: [(property_identifier) (private_property_identifier)] @name) @definition.method)
(class_body (abstract_method_signature name: [(property_identifier) (private_property_identifier)] @name) @definition.method)
(class_body (public_field_definition name: [(property_identifier) (private_property_identifier)] @name value: [(arrow_function) (function_expression)] @body) @definition.method)
(class_body (public_field_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.constant)
(interface_body (method_signature name: (property_identifier) @name) @definition.method)
(interface_body (property_signature name: (property_identifier) @name) @definition.constant)
(program (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression) (generator_function)] @body)) @definition.function)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)] @body)) @definition.function))
(statement_block (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)] @body)) @definition.function))
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (variable_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant))
(program (export_statement (variable_declaration (variable_declarator name: (identifier) @name)) @definition.constant))
(program (ambient_declaration (lexical_declaration (variable_declarator name: (identifier) @name))) @definition.constant)
(program (ambient_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.constant)
(statement_block (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant))

; ---- imports: ES modules, `import x = require()` and CommonJS require
(import_statement source: (string (string_fragment) @import.source)) @import
(import_specifier name: (identifier) @import.name alias: (identifier)? @import.alias)
(import_clause (identifier) @import.alias)
(namespace_import (identifier) @import.alias)
(import_statement (import_require_clause (identifier) @import.alias source: (string (string_fragment) @import.source))) @import
(program (lexical_declaration (variable_declarator name: (identifier) @import.alias
    value: (call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import.source)))))
  @import (#eq? @_require "require"))

; ---- comments and decorators travel with the definition below them
(comment) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (member_expression object: (identifier) @qualifier property: (property_identifier) @reference.call))
(call_expression function: (member_expression property: (property_identifier) @reference.call))
(new_expression constructor: (identifier) @reference.call)
(new_expression constructor: (member_expression object: (identifier) @qualifier property: (property_identifier) @reference.call))
(decorator (identifier) @reference.call)
(decorator (call_expression function: (identifier) @reference.call))
(extends_clause value: (identifier) @reference.base)
(extends_clause value: (member_expression property: (property_identifier) @reference.base))
(implements_clause (type_identifier) @reference.base)
(extends_type_clause type: (type_identifier) @reference.base)
(nested_type_identifier module: (identifier) @qualifier name: (type_identifier) @reference.type)
(type_identifier) @reference.type
(member_expression object: (identifier) @qualifier property: (property_identifier) @reference.name)
(identifier) @reference.name
