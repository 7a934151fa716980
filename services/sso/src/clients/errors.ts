import { AppError, defineMessages } from '@app/platform';

/** Registered clients' errors: stable codes, statuses and localized messages. */
export const clientNotFound = (id: string) => new AppError('SSO_CLIENT_NOT_FOUND', 404, 'sso.client.notFound', { id });

defineMessages({
  en: {
    'sso.client.notFound': 'No OAuth client has id {id}.',
    'sso.client.redirectUri': 'A redirect URI is absolute https (http only on localhost or a loopback address), without a fragment or credentials.',
    'sso.client.codeGrant': 'A client registered here signs users in with authorization_code: list it among grant_types.',
  },
  'pt-BR': {
    'sso.client.notFound': 'Nenhum cliente OAuth tem o id {id}.',
    'sso.client.redirectUri': 'Uma URI de redirecionamento é https absoluta (http apenas em localhost ou endereço de loopback), sem fragmento nem credenciais.',
    'sso.client.codeGrant': 'Um cliente registrado aqui autentica usuários com authorization_code: inclua-o em grant_types.',
  },
  es: {
    'sso.client.notFound': 'Ningún cliente OAuth tiene el id {id}.',
    'sso.client.redirectUri': 'Una URI de redirección es https absoluta (http solo en localhost o una dirección de loopback), sin fragmento ni credenciales.',
    'sso.client.codeGrant': 'Un cliente registrado aquí inicia sesión con authorization_code: inclúyalo en grant_types.',
  },
  fr: {
    'sso.client.notFound': "Aucun client OAuth n'a l'id {id}.",
    'sso.client.redirectUri': "Une URI de redirection est en https absolu (http seulement sur localhost ou une adresse de bouclage), sans fragment ni identifiants.",
    'sso.client.codeGrant': 'Un client enregistré ici connecte les utilisateurs avec authorization_code : ajoutez-le à grant_types.',
  },
  de: {
    'sso.client.notFound': 'Kein OAuth-Client hat die ID {id}.',
    'sso.client.redirectUri': 'Eine Weiterleitungs-URI ist absolutes https (http nur auf localhost oder einer Loopback-Adresse), ohne Fragment und ohne Zugangsdaten.',
    'sso.client.codeGrant': 'Ein hier registrierter Client meldet Benutzer mit authorization_code an: nehmen Sie es in grant_types auf.',
  },
});
