; C++ (.cc .cpp .cxx .hpp .hh .hxx, and .h that reads as C++): what nav chunks and links
; (contract: chunkers/queries/README.md). Qualified names use `::`.

; ---- definitions (a declaration inside a function body is a local: the graph drops value definitions
; that sit inside a function)
(function_definition declarator: (function_declarator declarator: [(identifier) (field_identifier) (operator_name) (destructor_name)] @name) body: (compound_statement) @body) @definition.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier scope: (_) @receiver name: (_) @name)) body: (compound_statement) @body) @definition.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)) body: (compound_statement) @body) @definition.function
(function_definition declarator: (reference_declarator (function_declarator declarator: [(identifier) (field_identifier)] @name)) body: (compound_statement) @body) @definition.function
(field_declaration_list (declaration declarator: (function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)) @definition.method)
(field_declaration_list (field_declaration declarator: (function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)) @definition.method)
((declaration declarator: (function_declarator declarator: (identifier) @name)) @definition.function)
(class_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(struct_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.struct
(enum_specifier name: (type_identifier) @name body: (enumerator_list) @body) @definition.enum
(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name body: (declaration_list) @body) @definition.module
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(concept_definition name: (identifier) @name) @definition.type
(preproc_def name: (identifier) @name) @definition.constant
(preproc_function_def name: (identifier) @name) @definition.macro
((declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(declaration_list (declaration declarator: (init_declarator declarator: (identifier) @name)) @definition.constant)
(field_declaration_list (field_declaration declarator: (field_identifier) @name) @definition.constant)

; ---- blocks whose statements count as top-level: header guards, `#if` branches, `extern "C" { }`
[(preproc_ifdef) (preproc_if) (preproc_else) (preproc_elif)] @transparent
(linkage_specification body: (declaration_list) @transparent)

; ---- includes
(preproc_include path: (string_literal (string_content) @import.source)) @import
(preproc_include path: (system_lib_string) @import.system) @import
(using_declaration) @import

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(call_expression function: (identifier) @reference.call)
(call_expression function: (qualified_identifier scope: (_) @qualifier name: (identifier) @reference.call))
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(base_class_clause (type_identifier) @reference.base)
(base_class_clause (template_type name: (type_identifier) @reference.base))
(qualified_identifier scope: (namespace_identifier) @qualifier name: (type_identifier) @reference.type)
(type_identifier) @reference.type
(identifier) @reference.name
