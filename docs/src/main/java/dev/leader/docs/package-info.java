/**
 * The reference guide's code samples: each page includes a tagged region of these classes
 * ({@code // tag::name[]} to {@code // end::name[]}), and {@code CodeSamplesTests} fails
 * when a page's block differs from its region, so every sample in the guide compiles.
 */
@NullMarked
package dev.leader.docs;

import org.jspecify.annotations.NullMarked;
