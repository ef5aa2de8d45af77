; C (.c, and .h read as C): what nav chunks and links (contract: chunkers/queries/README.md).

; ---- definitions (a declaration inside a function body is a local: the graph drops value definitions
; that sit inside a function)
(function_definition declarator: (function_declarator declarator: (identifier) @name) body: (compound_statement) @body) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)) body: (compound_statement) @body) @definition.function
((declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.function)
((declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @definition.function)
(type_definition type: (struct_specifier body: (field_declaration_list) @body) declarator: (type_identifier) @name) @definition.struct
(type_definition type: (union_specifier body: (field_declaration_list) @body) declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier body: (enumerator_list) @body) declarator: (type_identifier) @name) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.type
(type_definition declarator: (function_declarator declarator: (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name)))) @definition.type
(struct_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.struct
(enum_specifier name: (type_identifier) @name body: (enumerator_list) @body) @definition.enum
(enumerator_list (enumerator name: (identifier) @name) @definition.constant)
(preproc_def name: (identifier) @name) @definition.constant
(preproc_function_def name: (identifier) @name) @definition.macro
((declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
((declaration declarator: (identifier) @name) @definition.constant)
((declaration declarator: (array_declarator declarator: (identifier) @name)) @definition.constant)
((declaration declarator: (init_declarator declarator: (array_declarator declarator: (identifier) @name))) @definition.constant)
((declaration declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @name))) @definition.constant)

; ---- blocks whose statements count as top-level: header guards, `#if` branches, `extern "C" { }`
[(preproc_ifdef) (preproc_if) (preproc_else) (preproc_elif)] @transparent
(linkage_specification body: (declaration_list) @transparent)

; ---- includes
(preproc_include path: (string_literal (string_content) @import.source)) @import
(preproc_include path: (system_lib_string) @import.system) @import

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(type_identifier) @reference.type
(identifier) @reference.name
