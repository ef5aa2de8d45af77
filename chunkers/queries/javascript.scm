; JavaScript (.js .mjs .cjs .jsx): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions
(function_declaration name: (identifier) @name body: (statement_block) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (statement_block) @body) @definition.function
(class_declaration name: (identifier) @name body: (class_body) @body) @definition.class
(class_body (method_definition name: [(property_identifier) (private_property_identifier)] @name body: (statement_block) @body) @definition.method)
(class_body (field_definition property: [(property_identifier) (private_property_identifier)] @name) @definition.constant)
(program (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression) (generator_function)] @body)) @definition.function)
(program (variable_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression) (generator_function)] @body)) @definition.function)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)] @body)) @definition.function))
(program (lexical_declaration (variable_declarator name: (identifier) @name value: (class body: (class_body) @body))) @definition.class)
; exports.parse = function () {}, module.exports.parse = ...: a function of the module, no receiver
(program (expression_statement (assignment_expression
  left: (member_expression object: [(identifier) (member_expression)] @_object property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)] @body)
  (#match? @_object "^(module\\.)?exports$")) @definition.function)
; Router.prototype.route = function () {}: a method of Router
(program (expression_statement (assignment_expression
  left: (member_expression object: (member_expression object: (identifier) @receiver property: (property_identifier) @_proto) property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)] @body)
  (#eq? @_proto "prototype")) @definition.method)
; proto.handle = function () {} (an object the module builds its API on)
(program (expression_statement (assignment_expression
  left: (member_expression object: (identifier) @receiver property: (property_identifier) @name)
  right: [(function_expression) (arrow_function)] @body)
  (#not-match? @receiver "^(module|exports)$")) @definition.method)
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (variable_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant))
(program (export_statement (variable_declaration (variable_declarator name: (identifier) @name)) @definition.constant))

; ---- imports: ES modules and CommonJS require
(import_statement source: (string (string_fragment) @import.source)) @import
(import_specifier name: (identifier) @import.name alias: (identifier)? @import.alias)
(import_clause (identifier) @import.alias)
(namespace_import (identifier) @import.alias)
(program [(lexical_declaration (variable_declarator name: (identifier) @import.alias
    value: (call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import.source)))))
  (variable_declaration (variable_declarator name: (identifier) @import.alias
    value: (call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import.source)))))]
  @import (#eq? @_require "require"))
(program [(lexical_declaration (variable_declarator name: (object_pattern)
    value: (call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import.source)))))
  (variable_declaration (variable_declarator name: (object_pattern)
    value: (call_expression function: (identifier) @_require arguments: (arguments (string (string_fragment) @import.source)))))]
  @import (#eq? @_require "require"))

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (member_expression object: (identifier) @qualifier property: (property_identifier) @reference.call))
(call_expression function: (member_expression property: (property_identifier) @reference.call))
(new_expression constructor: (identifier) @reference.call)
(new_expression constructor: (member_expression object: (identifier) @qualifier property: (property_identifier) @reference.call))
(class_heritage (identifier) @reference.base)
(class_heritage (member_expression property: (property_identifier) @reference.base))
(member_expression object: (identifier) @qualifier property: (property_identifier) @reference.name)
(identifier) @reference.name
